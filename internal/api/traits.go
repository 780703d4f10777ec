package api

import (
	"regexp"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
)

// minorTraits is the version that added /v1/nodes/{node}/traits.
const minorTraits = 37

// customTraitRe is Ironic's CUSTOM_TRAIT_PATTERN.
var customTraitRe = regexp.MustCompile(`^CUSTOM_[A-Z0-9_]+$`)

// checkTrait is Ironic's TRAITS_SCHEMA (a CUSTOM_ name or one of
// os_traits' standard names, 1 to 255 characters), with jsonschema's
// message for what, the argument's name ("trait", or "body" for the list).
func checkTrait(what string, v any) error {
	s, ok := v.(string)
	switch {
	case !ok:
		return schemaError(what, "%s is not of type 'string'", maskedRepr(v))
	case s == "":
		return schemaError(what, "%s is too short", maskedRepr(s))
	case len(s) > 255:
		return schemaError(what, "%s is too long", maskedRepr(s))
	case customTraitRe.MatchString(s) || isStandardTrait(s):
		return nil
	}
	return schemaError(what, "%s is not valid under any of the given schemas. Possible root cause: %s does not match '^CUSTOM_[A-Z0-9_]+$'",
		maskedRepr(s), maskedRepr(s))
}

func isStandardTrait(s string) bool {
	return !strings.Contains(s, "\n") && strings.Contains(standardTraitList, "\n"+s+"\n")
}

func (hs nodeAPI) traitRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listTraits, nodeRule("baremetal:node:traits:list")},
		"PUT":    {hs.putTraits, nodeRule("baremetal:node:traits:set")},
		"DELETE": {hs.deleteTraits, nodeRule("baremetal:node:traits:delete")}},
		"/v1/nodes/{ident}/traits")
	s.handle(endpoint{"PUT": {hs.putTraits, nodeRule("baremetal:node:traits:set")},
		"DELETE": {hs.deleteTraits, nodeRule("baremetal:node:traits:delete")}}, "/v1/nodes/{ident}/traits/{trait}")
}

func traitsNotFound() error { return errNotFound() }

// GET /v1/nodes/{ident}/traits
func (hs nodeAPI) listTraits(rc *call) error {
	n, _, err := rc.nodeSub(minorTraits)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("traits")
	w.strings(nonNilStrings(n.Traits))
	w.endObj()
	return rc.json(200, w)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PUT /v1/nodes/{ident}/traits (replace all, body {"traits": [...]}) and
// PUT /v1/nodes/{ident}/traits/{trait} (add one, no body).
func (hs nodeAPI) putTraits(rc *call) error {
	s := hs.s
	if rc.minor < minorTraits {
		return traitsNotFound()
	}
	put, err := hs.traitsPut(rc)
	if err != nil {
		return err
	}
	trait, one, list := put.trait, put.one, put.list
	n, raw, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	if one == put.hasList {
		return invalid("A single node trait may be added via PUT /v1/nodes/<node identifier>/traits/<trait> with no body, or all node traits may be replaced via PUT /v1/nodes/<node identifier>/traits with the list of traits specified in the request body.")
	}
	if one && put.body {
		return invalid("No body should be provided when adding a trait")
	}
	_, err = s.cfg.Lifecycle.SetTraits(rc.ctx, n.UUID, func(cur []string) ([]string, error) {
		if one {
			return append(cur, trait), nil
		}
		return list, nil
	})
	if err != nil {
		return err
	}
	if one {
		rc.w.Header().Set("Location", rc.link(false, "nodes", raw, "traits", trait))
	}
	return rc.noContent()
}

// traitsBody validates the body of PUT .../traits (Ironic's node
// TRAITS_SCHEMA); hasList reports a "traits" key.
func traitsBody(body any) (list []string, hasList bool, err error) {
	if body == nil {
		return nil, false, nil
	}
	doc, ok := body.(map[string]any)
	if !ok {
		return nil, false, schemaError("body", "%s is not of type 'object'", maskedRepr(body))
	}
	var extra []string
	for k := range doc {
		if k != "traits" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return nil, false, additionalProps("body", extra)
	}
	v, ok := doc["traits"]
	if !ok {
		return nil, false, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, false, schemaError("body", "%s is not of type 'array'", maskedRepr(v))
	}
	list = make([]string, 0, len(items))
	for _, it := range items {
		if err := checkTrait("body", it); err != nil {
			return nil, false, err
		}
		list = append(list, it.(string))
	}
	return list, true, nil
}

// isTruthy is Python's truth of a decoded JSON body.
func isTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	case string:
		return x != ""
	case bool:
		return x
	case float64:
		return x != 0
	}
	return true
}

// DELETE /v1/nodes/{ident}/traits (all) and .../traits/{trait} (one).
func (hs nodeAPI) deleteTraits(rc *call) error {
	s := hs.s
	n, _, err := rc.nodeSub(minorTraits)
	if err != nil {
		return err
	}
	trait := rc.r.PathValue("trait")
	_, err = s.cfg.Lifecycle.SetTraits(rc.ctx, n.UUID, func(cur []string) ([]string, error) {
		if trait == "" {
			return nil, nil
		}
		i := slices.Index(cur, trait)
		if i < 0 {
			return nil, fault.New(fault.NotFound, "Node %s doesn't have a trait '%s'", n.UUID, trait)
		}
		return slices.Delete(cur, i, i+1), nil
	})
	if err != nil {
		return err
	}
	return rc.noContent()
}

// traitsPut is a PUT of traits, the node's or a runbook's, read as Ironic
// checks it: no query, the path's one trait (TRAITS_SCHEMA), then the
// body's {"traits": [...]} if any.
type traitsPut struct {
	trait         string   // the path's one trait
	one           bool     // the path names one trait
	list          []string // the body's traits
	hasList, body bool     // the body has "traits"; it has anything truthy
}

func (hs nodeAPI) traitsPut(rc *call) (p traitsPut, err error) {
	if err = rc.checkQuery(); err != nil {
		return p, err
	}
	p.trait = rc.r.PathValue("trait")
	if p.one = p.trait != ""; p.one {
		if err = checkTrait("trait", p.trait); err != nil {
			return p, err
		}
	}
	body, err := rc.decodeBody(rc.s.cfg.MaxBodyBytes)
	if err != nil {
		return p, err
	}
	p.body = isTruthy(body)
	p.list, p.hasList, err = traitsBody(body)
	return p, err
}
