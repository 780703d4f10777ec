package api

import (
	"strings"
)

// minorIndicators is the version that added the indicators API.
const minorIndicators = 63

func (hs managementAPI) indicatorRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listIndicators, nodeRule("baremetal:node:get_indicator_state")}}, "/v1/nodes/{ident}/management/indicators")
	s.handle(endpoint{"GET": {hs.getIndicator, nodeRule("baremetal:node:get_indicator_state")},
		"PUT": {hs.setIndicator, nodeRule("baremetal:node:set_indicator_state")}}, "/v1/nodes/{ident}/management/indicators/{indicator}")
}

// splitIndicator parses Ironic's "<name>@<component>".
func splitIndicator(unique string) (name, component string, err error) {
	name, component, ok := strings.Cut(unique, "@")
	if !ok {
		return "", "", invalid("Malformed indicator name \"%s\"", unique)
	}
	return name, component, nil
}

// GET /v1/nodes/{ident}/management/indicators (1.63).
func (hs managementAPI) listIndicators(rc *call) error {
	s := hs.s
	if rc.minor < minorIndicators {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	raw := rc.r.PathValue("ident")
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, raw)
	if err != nil {
		return err
	}
	comps, err := s.cfg.Management.Indicators(rc.ctx, ident)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("indicators")
	w.arr()
	for _, c := range comps {
		for _, ind := range c.Indicators {
			unique := ind.Name + "@" + c.Name
			w.obj()
			w.key("name")
			w.str(unique)
			w.key("component")
			w.str(c.Name)
			w.key("readonly")
			w.boolean(ind.ReadOnly)
			w.key("states")
			w.strings(ind.States)
			w.key("links")
			rc.links(w, "nodes", pathEscape(raw), "management", "indicators", unique)
			w.endObj()
		}
	}
	w.endArr()
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/nodes/{ident}/management/indicators/{name}@{component}: {"state"}.
func (hs managementAPI) getIndicator(rc *call) error {
	s := hs.s
	if rc.minor < minorIndicators {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	name, comp, err := splitIndicator(rc.r.PathValue("indicator"))
	if err != nil {
		return err
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	st, err := s.cfg.Management.IndicatorState(rc.ctx, ident, comp, name)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("state")
	w.str(st)
	w.endObj()
	return rc.json(200, w)
}

// PUT /v1/nodes/{ident}/management/indicators/{name}@{component}
// {"state": "ON"}: 204.
func (hs managementAPI) setIndicator(rc *call) error {
	s := hs.s
	if rc.minor < minorIndicators {
		return errNotFound()
	}
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "state")
	if err != nil {
		return err
	}
	state, present, err := argString("state", args["state"])
	if err != nil {
		return err
	}
	if !present {
		return missingArg("state")
	}
	name, comp, err := splitIndicator(rc.r.PathValue("indicator"))
	if err != nil {
		return err
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Management.SetIndicatorState(rc.ctx, ident, "", comp, name, state); err != nil {
		return err
	}
	return rc.noContent()
}
