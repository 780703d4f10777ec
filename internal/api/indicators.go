package api

import (
	"strings"
)

// minorIndicators is the version that added the indicators API.
const minorIndicators = 63

func (s *Server) indicatorRoutes() {
	s.handle(endpoint{"GET": {s.listIndicators, nodeRule("baremetal:node:get_indicator_state")}}, "/v1/nodes/{ident}/management/indicators")
	s.handle(endpoint{"GET": {s.getIndicator, nodeRule("baremetal:node:get_indicator_state")},
		"PUT": {s.setIndicator, nodeRule("baremetal:node:set_indicator_state")}}, "/v1/nodes/{ident}/management/indicators/{indicator}")
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
func (s *Server) listIndicators(rc *call) error {
	if rc.minor < minorIndicators {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	raw := rc.r.PathValue("ident")
	ident, err := rc.nodeIdent(raw)
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
func (s *Server) getIndicator(rc *call) error {
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
	ident, err := rc.nodeIdent(rc.r.PathValue("ident"))
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
func (s *Server) setIndicator(rc *call) error {
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
	ident, err := rc.nodeIdent(rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Management.SetIndicatorState(rc.ctx, ident, "", comp, name, state); err != nil {
		return err
	}
	return rc.noContent()
}
