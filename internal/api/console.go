package api

import (
	"maps"
	"strings"
)

func (hs managementAPI) consoleRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.getConsole, nodeRule("baremetal:node:get_console")},
		"PUT": {hs.setConsole, nodeRule("baremetal:node:set_console_state")}}, "/v1/nodes/{ident}/states/console")
}

// GET /v1/nodes/{ident}/states/console: {"console_enabled", "console_info"}.
func (hs managementAPI) getConsole(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	on, info, err := s.cfg.Management.Console(rc.ctx, ident)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("console_enabled")
	w.boolean(on)
	w.key("console_info")
	if info == nil {
		w.null()
	} else {
		w.object(hs.absoluteConsoleURL(rc, info))
	}
	w.endObj()
	return rc.json(200, w)
}

// PUT /v1/nodes/{ident}/states/console {"enabled": bool}: 202 with a
// Location of the console state.
func (hs managementAPI) setConsole(rc *call) error {
	s := hs.s
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "enabled")
	if err != nil {
		return err
	}
	enabled, err := argBool("enabled", args["enabled"])
	if err != nil {
		return err
	}
	if enabled == nil {
		return missingArg("enabled")
	}
	raw := rc.r.PathValue("ident")
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, raw)
	if err != nil {
		return err
	}
	if err := s.cfg.Management.SetConsole(rc.ctx, ident, "", *enabled); err != nil {
		return err
	}
	return rc.accepted(rc.link(false, "nodes", pathEscape(raw), "states", "console"))
}

// absoluteConsoleURL makes a console_info url that is an API path ("/v1/...")
// a WebSocket URL of this API (ws:// or wss:// on the public URL).
func (hs managementAPI) absoluteConsoleURL(rc *call, info map[string]any) map[string]any {
	u, ok := info["url"].(string)
	if !ok || !strings.HasPrefix(u, "/") {
		return info
	}
	out := maps.Clone(info)
	base := rc.base
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	out["url"] = base + u
	return out
}
