package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/pkg/events"
)

// projectPolicy is Ironic's default policy for project-scoped principals
// (a jwt token with a project claim), for the routes it knows; every other
// route requires system scope. System-scoped principals (http_basic users,
// tokens without a project) pass, but a system member's PATCH of an active
// node's owner (baremetal:node:update_owner_provisioned).
//
// A node is visible to project P when its owner or its lessee is P;
// others are answered 404, as Ironic does. Node lists are narrowed to
// ?project=P. Port routes follow their node. The rules (Ironic's policy
// names, with who may act on a visible node) are in policyrules.go.
type projectPolicy struct {
	nodes nodeReader
	next  http.Handler
}

// nodeReader is what the policy reads to decide.
type nodeReader interface {
	GetNode(ctx context.Context, ident string) (*model.Node, error)
	GetPort(ctx context.Context, ident string) (*model.Port, error)
	GetVolumeConnector(ctx context.Context, uuid string) (*model.VolumeConnector, error)
	GetVolumeTarget(ctx context.Context, uuid string) (*model.VolumeTarget, error)
	GetRunbook(ctx context.Context, ident string) (*model.Runbook, error)
}

// Besides routeRules and patchPaths (policyrules.go): GET /v1/nodes,
// /v1/nodes/detail, /v1/fleet/nodes, /v1/fleet/summary and the event
// stream are narrowed to ?project=P (the store's owner-or-lessee filter,
// so counts are the project's too); POST /v1/nodes (baremetal:node:create)
// is for system admins; every other route (drivers, conductors, chassis,
// portgroups, allocations, /metrics, resources this policy does not know)
// needs system scope (deploy templates too: Ironic's defaults for them are
// SYSTEM_READER and SYSTEM_ADMIN; inspection rules are checked by their
// own rules, systemRules in policysystem.go, for every principal). Runbooks
// follow their own rules (policyrunbooks.go): a project reads its own and
// the public ones, and its admins create, change, delete and use its own; a
// provision request naming a runbook needs baremetal:runbook:use on it too.
// Node fields a principal may not see (hiddenFields)
// are replaced in every node rendering and stream event, through the
// api.Redactor set on the request.

func (p *projectPolicy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who, ok := auth.PrincipalOf(r.Context())
	if ok && !who.Scoped() && !systemAdmin(who) {
		if status, msg := p.ownerProvisioned(r); status != 0 {
			api.WriteError(w, status, msg)
			return
		}
	}
	if ok && !auth.PublicPath(r.URL.Path) {
		if status, msg := checkSystemRules(r, who); status != 0 {
			api.WriteError(w, status, msg)
			return
		}
	}
	if !ok || !who.Scoped() || auth.PublicPath(r.URL.Path) {
		p.next.ServeHTTP(w, r)
		return
	}
	r = r.WithContext(api.WithProject(api.WithRedactor(r.Context(), redactor(who)), who.Project))
	status, msg := p.decide(w, r, who)
	if status != 0 {
		api.WriteError(w, status, msg)
		return
	}
	p.next.ServeHTTP(w, r)
}

// decide returns 0 to let r through (possibly narrowed), else the refusal.
func (p *projectPolicy) decide(w http.ResponseWriter, r *http.Request, who auth.Principal) (int, string) {
	path := strings.TrimSuffix(strings.TrimRight(r.URL.Path, "/"), ".json")
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	m := r.Method
	if m == http.MethodHead {
		m = http.MethodGet
	}
	narrow := func() (int, string) {
		if m != http.MethodGet {
			return denied("baremetal:node:create")
		}
		q := r.URL.Query()
		q.Set("project", who.Project) // owner or lessee is the project
		r.URL.RawQuery = q.Encode()
		return 0, ""
	}
	switch {
	case path == "/v1/nodes" || path == "/v1/nodes/detail" || path == "/v1/fleet/nodes" ||
		path == "/v1/fleet/summary" || path == events.StreamPath:
		return narrow()
	case path == "/v1/nodes/validate":
		return p.onNode(r, who, q1(r, "node"), []string{routeRules["GET /v1/nodes/validate"]})
	case len(seg) >= 3 && seg[1] == "nodes":
		if m == http.MethodPatch && len(seg) == 3 {
			rules, err := patchRules(r)
			if err != nil {
				return http.StatusBadRequest, err.Error()
			}
			return p.onNode(r, who, seg[2], rules)
		}
		key := m + " /v1/nodes/{node}"
		if len(seg) == 5 && (seg[3] == "vifs" || seg[3] == "traits" || seg[3] == "bios") {
			seg[4] = "{id}" // one VIF, trait or BIOS setting: the collection's rule
		}
		if rest := strings.Join(seg[3:], "/"); rest != "" {
			key += "/" + rest
		}
		rule, known := routeRules[key]
		if !known && m == http.MethodGet {
			rule = "baremetal:node:get" // another view of a visible node
		}
		if key == "GET /v1/nodes/{node}/bios/{id}" {
			rule = "baremetal:node:bios:get"
		}
		if len(seg) >= 4 && seg[3] == "vendor_passthru" {
			rule = "baremetal:node:vendor_passthru" // whatever the HTTP method
		}
		if status, msg := p.onNode(r, who, seg[2], []string{rule}); status != 0 || key != "PUT /v1/nodes/{node}/states/provision" {
			return status, msg
		}
		return p.runbookUse(r, who)
	case len(seg) >= 2 && seg[1] == "volume":
		return p.onVolume(r, who, seg, m)
	case len(seg) >= 2 && seg[1] == "runbooks":
		return p.onRunbooks(r, who, seg, m)
	case len(seg) == 3 && seg[1] == "ports" && seg[2] != "detail":
		port, err := p.nodes.GetPort(r.Context(), seg[2])
		if err != nil {
			return notFound("Port", seg[2], err)
		}
		return p.onNode(r, who, port.NodeUUID, []string{routeRules[m+" /v1/ports/{port}"]})
	case (len(seg) == 2 || len(seg) == 3 && seg[2] == "detail") && seg[1] == "ports":
		if m == http.MethodPost {
			return p.onNode(r, who, bodyNode(r), []string{routeRules["POST /v1/ports"]})
		}
		node := q1(r, "node")
		if node == "" {
			node = q1(r, "node_uuid")
		}
		if node == "" {
			return http.StatusForbidden, "A project-scoped token lists the ports of one node: add ?node=<node>."
		}
		return p.onNode(r, who, node, []string{routeRules["GET /v1/ports"]})
	}
	return http.StatusForbidden, "This resource requires a system-scoped token (one without a project)."
}

// onVolume decides /v1/volume/...: the links are anyone's; a connector or
// target follows its node (one the principal may not see is answered
// 404, as Ironic's check_volume_policy_and_retrieve); a project lists
// those of one node (?node=, or under /v1/nodes/{node}/volume).
func (p *projectPolicy) onVolume(r *http.Request, who auth.Principal, seg []string, m string) (int, string) {
	switch {
	case len(seg) == 2 && m == http.MethodGet:
		return 0, ""
	case len(seg) == 3 && m == http.MethodPost:
		return p.onNode(r, who, bodyNode(r), []string{routeRules["POST /v1/volume/"+seg[2]]})
	case len(seg) == 3:
		rule := routeRules[m+" /v1/volume/"+seg[2]]
		if rule == "" {
			break
		}
		node := q1(r, "node")
		if node == "" {
			return http.StatusForbidden, "A project-scoped token lists the volume " + seg[2] + " of one node: add ?node=<node>."
		}
		return p.onNode(r, who, node, []string{rule})
	case len(seg) == 4:
		rule := routeRules[m+" /v1/volume/"+seg[2]+"/{id}"]
		if rule == "" {
			break
		}
		kind, node, err := "Volume connector", "", error(nil)
		if seg[2] == "targets" {
			kind = "Volume target"
			var t *model.VolumeTarget
			if t, err = p.nodes.GetVolumeTarget(r.Context(), seg[3]); err == nil {
				node = t.NodeUUID
			}
		} else {
			var c *model.VolumeConnector
			if c, err = p.nodes.GetVolumeConnector(r.Context(), seg[3]); err == nil {
				node = c.NodeUUID
			}
		}
		if err != nil {
			return notFound(kind, seg[3], err)
		}
		status, msg := p.onNode(r, who, node, []string{rule})
		if status == http.StatusNotFound {
			return http.StatusNotFound, kind + " " + seg[3] + " could not be found."
		}
		return status, msg
	}
	return http.StatusForbidden, "This resource requires a system-scoped token (one without a project)."
}

// onNode checks rules on the node ident, in order, as Ironic's
// check_multiple_node_policies_and_retrieve: a node the principal may not
// see (baremetal:node:get) is answered 404, a rule it fails 403 with the
// rule's name. An empty or unknown rule needs system scope.
func (p *projectPolicy) onNode(r *http.Request, who auth.Principal, ident string, rules []string) (int, string) {
	for _, name := range rules {
		if _, known := allows(name, subject{}); !known {
			return http.StatusForbidden, "This action requires a system-scoped token (one without a project)."
		}
	}
	if ident == "" {
		return http.StatusBadRequest, "Missing node."
	}
	n, err := p.nodes.GetNode(r.Context(), ident)
	if err != nil {
		return notFound("Node", ident, err)
	}
	s := subjectOf(who, n)
	if ok, _ := allows("baremetal:node:get", s); !ok {
		return http.StatusNotFound, "Node " + ident + " could not be found."
	}
	for _, name := range rules {
		if ok, _ := allows(name, s); !ok {
			return denied(name)
		}
	}
	return 0, ""
}

func denied(rule string) (int, string) {
	return http.StatusForbidden, rule + " is disallowed by policy"
}

func notFound(kind, ident string, err error) (int, string) {
	if errors.Is(err, store.ErrNotFound) {
		return http.StatusNotFound, kind + " " + ident + " could not be found."
	}
	return http.StatusServiceUnavailable, "The policy could not read the " + strings.ToLower(kind) + "; try again."
}

func q1(r *http.Request, k string) string { return r.URL.Query().Get(k) }

// peekBody reads a JSON body (at most 1 MiB, as the API caps it) and puts
// it back for the handler.
func peekBody(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1)) // one more: the API answers 413
	r.Body = io.NopCloser(bytes.NewReader(raw))
	return raw, err
}

// bodyNode reads node_uuid from a JSON body.
func bodyNode(r *http.Request) string {
	raw, err := peekBody(r)
	if err != nil {
		return ""
	}
	var doc struct {
		NodeUUID string `json:"node_uuid"`
	}
	_ = json.Unmarshal(raw, &doc)
	return doc.NodeUUID
}

// patchRules are the rules a node PATCH body needs, one per operation
// (patchRule), baremetal:node:update first when no operation names
// another, as Ironic checks them. A body that is not a JSON Patch list is
// left to the API to refuse: it needs baremetal:node:update.
func patchRules(r *http.Request) ([]string, error) {
	raw, err := peekBody(r)
	if err != nil {
		return nil, fmt.Errorf("the request body could not be read")
	}
	var ops []struct {
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if json.Unmarshal(raw, &ops) != nil || len(ops) == 0 {
		return []string{"baremetal:node:update"}, nil
	}
	var rules []string
	generic := false
	for _, op := range ops {
		rule := patchRule(op.Path, op.Value)
		if rule == "baremetal:node:update" {
			generic = true
			continue
		}
		if !slices.Contains(rules, rule) {
			rules = append(rules, rule)
		}
	}
	if generic {
		rules = append(rules, "baremetal:node:update")
	}
	return rules, nil
}

// systemAdmin reports whether a system-scoped principal is an admin: an
// http_basic user (no roles: Ironic's admin) or a token with the admin role.
func systemAdmin(who auth.Principal) bool {
	return len(who.Roles) == 0 || who.HasRole(auth.RoleAdmin)
}

// ownerProvisioned is baremetal:node:update_owner_provisioned (system
// admins only) for a system member's PATCH of a node's owner: refused
// with 409 while the node is active, as Ironic answers.
func (p *projectPolicy) ownerProvisioned(r *http.Request) (int, string) {
	path := strings.TrimSuffix(strings.TrimRight(r.URL.Path, "/"), ".json")
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if r.Method != http.MethodPatch || len(seg) != 3 || seg[0] != "v1" || seg[1] != "nodes" {
		return 0, ""
	}
	rules, err := patchRules(r)
	if err != nil || !slices.Contains(rules, "baremetal:node:update:owner") {
		return 0, "" // the API answers a bad body
	}
	n, err := p.nodes.GetNode(r.Context(), seg[2])
	if err != nil {
		return 0, "" // the API answers 404
	}
	if n.ProvisionState == fsm.Active {
		return http.StatusConflict, fmt.Sprintf("Cannot update owner of node \"%s\" while it is in state \"%s\".", n.UUID, fsm.Active)
	}
	return 0, ""
}
