package api

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/policy"
	"github.com/anvil-metal/anvil/internal/store"
)

// Authorization is decided here, on the route table, after the API has
// parsed the request the one way it parses it: every route's method
// carries a guard (the rules Ironic checks, in order, and what they are
// checked against), handle runs it before the handler, and the target
// (a node, a port's node, a runbook) is resolved by the same functions the
// handler then uses, loaded once (rc.target). Handlers whose rules depend
// on the body (a node PATCH, a port's node in a POST) call rc.authorize
// after their own parse. The decision itself is internal/policy's, a pure
// function of the principal's credentials, the rule and the target.
//
// Under noauth there is no principal and every rule passes (Ironic's
// noauth is an admin context). Public routes (the root documents, the
// agent's lookup, heartbeat and continue_inspection, guarded by the agent
// token) check nothing.

// guard is the authorization of one method of one route.
type guard struct {
	rules []string // checked in order; the first refused is named in the 403
	on    subject
	// system: a project-scoped principal is refused whatever the rule:
	// Anvil serves this route to system scope only (Ironic's project
	// semantics for it, such as owner-restricted allocations, are not
	// implemented), as docs/policy.md says.
	system bool
	// body: the handler derives more rules (or the target) from the body
	// or the query and calls rc.authorize after its own parse.
	body bool
	// kind and owner, for onRecord: the record kind, and the owner of the
	// record the path names (loading it).
	kind  string
	owner func(*call) (string, error)
}

// subject is what a route's rules are checked against.
type subject int

const (
	onNothing   subject = iota // system-wide resources: no target
	onPublic                   // no credentials needed
	onNode                     // the node {ident} names
	onPort                     // the port {ident} names, by its node
	onConnector                // the volume connector {id}, by its node
	onVolTarget                // the volume target {id}, by its node
	onRunbook                  // the runbook {runbook}
	onRecord                   // the record {record} of a kind on the generic record table
	onList                     // a list: rules[0] lists the project's, rules[1] all
)

// Guard constructors, as the route tables read.
func public() guard                       { return guard{on: onPublic} }
func systemOnly(rules ...string) guard    { return guard{rules: rules, system: true} }
func nodeRule(rules ...string) guard      { return guard{rules: rules, on: onNode} }
func nodeBody(rules ...string) guard      { return guard{rules: rules, on: onNode, body: true} }
func portRule(rule string) guard          { return guard{rules: []string{rule}, on: onPort} }
func connectorRule(rule string) guard     { return guard{rules: []string{rule}, on: onConnector} }
func volTargetRule(rule string) guard     { return guard{rules: []string{rule}, on: onVolTarget} }
func runbookRule(rules ...string) guard   { return guard{rules: rules, on: onRunbook} }
func runbookBody(rules ...string) guard   { return guard{rules: rules, on: onRunbook, body: true} }
func listRule(list, listAll string) guard { return guard{rules: []string{list, listAll}, on: onList} }

// recordRule: the rules of a record kind's route, checked on the owner of
// the record the path names; a PATCH (body) checks its own, which depend
// on the paths it changes (rc.authorizeRecordRules).
func recordRule(kind string, owner func(*call) (string, error), body bool, rules ...string) guard {
	return guard{rules: rules, on: onRecord, kind: kind, owner: owner, body: body}
}

// bodyRule: the rules read a target the handler finds in the body or the
// query (a port's node, a volume record's node); a system principal is
// checked here, a project's by the handler (rc.authorize).
func bodyRule(rules ...string) guard { return guard{rules: rules, body: true} }

// authz is one request's authorization state.
type authz struct {
	who     *auth.Principal // nil: noauth, or a public route
	creds   policy.Creds
	pending bool // a body guard whose handler has not called authorize yet

	// The target the route resolved, loaded once; the handler reuses it.
	node      *model.Node
	nodeIdent string // nodeIdent's answer for the path's {ident}
	runbook   *model.Runbook
	record    any // a record kind's *T (record_kinds.go)
}

// scoped reports whether the request's principal acts for one project.
func (rc *call) scoped() bool { return rc.auth.who != nil && rc.auth.who.Scoped() }

// project is the principal's project, "" when not scoped.
func (rc *call) project() string {
	if rc.scoped() {
		return rc.auth.who.Project
	}
	return ""
}

// allowed reports whether the principal may act under rule on t (always
// under noauth).
func (rc *call) allowed(rule string, t policy.Target) bool {
	if rc.auth.who == nil {
		return true
	}
	return rc.s.enforcer.Allowed(rc.auth.creds, rule, t)
}

// denied is Ironic's 403 for a refused rule.
func denied(rule string) error {
	return fault.New(fault.Forbidden, "%s is disallowed by policy", rule)
}

// errSystemScope refuses a project-scoped principal a route Anvil serves
// to system scope only.
func errSystemScope() error {
	return fault.New(fault.Forbidden, "This resource requires a system-scoped token (one without a project).")
}

// check refuses the first of rules the principal may not act under on t.
func (rc *call) check(t policy.Target, rules ...string) error {
	for _, r := range rules {
		if !rc.allowed(r, t) {
			return denied(r)
		}
	}
	return nil
}

// authorizeRoute runs g for the request, before its handler.
func (rc *call) authorizeRoute(g guard) error {
	if g.on == onPublic {
		return nil
	}
	who, ok := auth.PrincipalOf(rc.ctx)
	if !ok {
		return nil // noauth
	}
	rc.auth.who, rc.auth.creds = &who, policy.CredsOf(who)
	if who.Scoped() {
		rc.redact = rc.hideFields
	}
	if g.system && who.Scoped() {
		return errSystemScope()
	}
	switch g.on {
	case onList:
		return rc.authorizeList(g.rules[0], g.rules[1])
	case onNode, onPort, onConnector, onVolTarget:
		return rc.authorizeNodeTarget(g)
	case onRunbook:
		return rc.authorizeRunbook(g)
	case onRecord:
		return rc.authorizeRecord(g)
	}
	if g.body {
		// A system principal's rules need no target; a project's are
		// checked by the handler on the target it parses.
		if !who.Scoped() {
			return rc.check(nil, g.rules...)
		}
		rc.auth.pending = true
		return nil
	}
	return rc.check(nil, g.rules...)
}

// unscoped is a target guard's check of a principal that is not
// project-scoped: its rules need no target; a body guard's are checked by
// the handler (rc.auth.pending).
func (rc *call) unscoped(g guard) error {
	if g.body {
		rc.auth.pending = true
		return nil
	}
	return rc.check(nil, g.rules...)
}

// authorizeList: a principal allowed list_all sees everything it asks
// for; one allowed only list sees its project's (owner or lessee), and
// asking for another project's is list_all's 403, as Ironic's
// check_list_policy.
func (rc *call) authorizeList(list, listAll string) error {
	if rc.allowed(listAll, nil) {
		return nil
	}
	if err := rc.check(nil, list); err != nil {
		return err
	}
	p := rc.project()
	if p == "" {
		return denied(listAll)
	}
	if v, ok := rc.query["project"]; ok && (len(v) != 1 || v[0] != p) {
		return denied(listAll)
	}
	rc.query.Set("project", p)
	return nil
}

// authorizeNodeTarget resolves the node of a node, port or volume record
// route, loads it once, and checks the route's rules on it: a node the
// principal may not see (baremetal:node:get) is the record's 404, as
// Ironic's check_node_policy_and_retrieve; a refused rule 403.
func (rc *call) authorizeNodeTarget(g guard) error {
	if !rc.scoped() {
		return rc.unscoped(g) // a body guard's handler checks its rules (they may need the node)
	}
	var (
		n        *model.Node
		notFound error
		err      error
	)
	switch g.on {
	case onNode:
		if n, _, err = (nodeAPI{rc.s}).loadNode(rc); err != nil {
			return err
		}
		notFound = fault.NodeNotFound(rc.r.PathValue("ident"))
	case onPort:
		var p *model.Port
		if p, err = (portAPI{rc.s}).loadPort(rc); err != nil {
			return err
		}
		notFound = fault.Missing("Port", rc.r.PathValue("ident"))
		n, err = rc.nodeOf(p.NodeUUID, notFound)
	case onConnector, onVolTarget:
		n, notFound, err = rc.volumeRecordNode(g.on)
	}
	if err != nil {
		return err
	}
	t := nodeTarget(n)
	if !rc.allowed("baremetal:node:get", t) {
		return notFound
	}
	if g.body {
		rc.auth.pending = true
		return nil
	}
	return rc.check(t, g.rules...)
}

// nodeOf reads the node a record belongs to; a record whose node is gone
// is answered as the record's 404.
func (rc *call) nodeOf(uuid string, notFound error) (*model.Node, error) {
	n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, uuid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	return n, err
}

// volumeRecordNode reads the node of the volume connector or target the
// path names.
func (rc *call) volumeRecordNode(on subject) (*model.Node, error, error) {
	k, nf := connectorKind, fault.NotFoundFor("Volume connector")
	if on == onVolTarget {
		k, nf = targetKind, fault.NotFoundFor("Volume target")
	}
	id, err := k.id(rc)
	if err != nil {
		return nil, nil, err
	}
	var node string
	if on == onVolTarget {
		var t *model.VolumeTarget
		if t, err = fetch(rc.ctx, rc.s.cfg.Details.Volumes().GetVolumeTarget, id, id, nf); err == nil {
			node = t.NodeUUID
		}
	} else {
		var c *model.VolumeConnector
		if c, err = fetch(rc.ctx, rc.s.cfg.Details.Volumes().GetVolumeConnector, id, id, nf); err == nil {
			node = c.NodeUUID
		}
	}
	if err != nil {
		return nil, nil, err
	}
	n, err := rc.nodeOf(node, nf(id))
	return n, nf(id), err
}

// authorize checks rules on the node of the route (or n, when the
// handler found the node in the body or the query): the handlers of body
// guards call it after their own parse, before they act.
func (rc *call) authorize(n *model.Node, rules ...string) error {
	rc.auth.pending = false
	if rc.auth.who == nil {
		return nil
	}
	if n == nil {
		n = rc.auth.node
	}
	if n == nil {
		return rc.check(nil, rules...)
	}
	t := nodeTarget(n)
	if rc.scoped() && !rc.allowed("baremetal:node:get", t) {
		return fault.NodeNotFound(n.UUID)
	}
	return rc.check(t, rules...)
}

// nodeTarget is a node's policy target.
func nodeTarget(n *model.Node) policy.Target { return policy.NodeTarget(n.Owner, n.Lessee) }

// authorizeRunbook loads the runbook of the path and checks the route's
// rules with its owner: a public runbook may be read by anyone who may
// list runbooks, as Ironic's RunbooksController.get_one.
func (rc *call) authorizeRunbook(g guard) error {
	if !rc.scoped() {
		return rc.unscoped(g)
	}
	rb, err := (recordAPI{rc.s}).loadRunbook(rc)
	if err != nil {
		return err
	}
	rc.auth.runbook = rb
	if g.body {
		rc.auth.pending = true
		return nil
	}
	t := runbookTarget(rb)
	if slices.Contains(g.rules, "baremetal:runbook:get") && rb.Public {
		return nil
	}
	return rc.check(t, g.rules...)
}

// runbookTarget is a runbook's policy target.
func runbookTarget(rb *model.Runbook) policy.Target {
	return policy.Target{"runbook.owner": rb.Owner}
}

// authorizeRunbookRules checks rules on the runbook the route loaded (the
// PATCH's rules depend on its paths).
func (rc *call) authorizeRunbookRules(rules ...string) error {
	rc.auth.pending = false
	if rc.auth.who == nil {
		return nil
	}
	var t policy.Target
	if rc.auth.runbook != nil {
		t = runbookTarget(rc.auth.runbook)
	}
	return rc.check(t, rules...)
}

// authorizeRecord loads the record of the path and checks the route's
// rules with its owner: one a project-scoped principal may not read is
// the kind's 404, not a 403 that says it exists.
func (rc *call) authorizeRecord(g guard) error {
	if !rc.scoped() {
		return rc.unscoped(g)
	}
	owner, err := g.owner(rc)
	if err != nil {
		return err
	}
	t := policy.Target{g.kind + ".owner": owner}
	if !rc.allowed("baremetal:"+g.kind+":get", t) {
		return fault.Missing(recordTitle(g.kind), rc.r.PathValue("record"))
	}
	if g.body {
		rc.auth.pending = true
		return nil
	}
	return rc.check(t, g.rules...)
}

// authorizeRecordRules checks rules on the record the route loaded (a
// PATCH's rules depend on its paths).
func (rc *call) authorizeRecordRules(kind string, rules ...string) error {
	rc.auth.pending = false
	if rc.auth.who == nil {
		return nil
	}
	var t policy.Target
	if r, ok := rc.auth.record.(interface{ Head() *model.RecordHead }); ok {
		t = policy.Target{kind + ".owner": r.Head().Owner}
	}
	return rc.check(t, rules...)
}

// hiddenFields are the node fields a principal who may see the node but
// not the field is shown a placeholder for (Ironic's node_sanitize): by
// default a lessee sees none of them, an owner all.
var hiddenFields = []struct {
	field, rule string
	shown       any
}{
	{"driver_info", "baremetal:node:get:driver_info",
		map[string]any{"content": "** Redacted - requires baremetal:node:get:driver_info permission. **"}},
	{"last_error", "baremetal:node:get:last_error",
		"** Value Redacted - Requires baremetal:node:get:last_error permission. **"},
	{"reservation", "baremetal:node:get:reservation",
		"** Redacted - requires baremetal:node:get:reservation permission. **"},
	{"driver_internal_info", "baremetal:node:get:driver_internal_info",
		map[string]any{"content": "** Redacted - Requires baremetal:node:get:driver_internal_info permission. **"}},
	// Not a node field: a volume target's properties (its node's target).
	{TargetPropertiesField, "baremetal:volume:view_target_properties",
		map[string]any{"redacted_contents": "** Value redacted: Requires permission baremetal:volume:view_target_properties access. Permission denied. **"}},
}

// hideFields is the Redactor of a project-scoped principal.
func (rc *call) hideFields(n *model.Node, field string) (any, bool) {
	for _, h := range hiddenFields {
		if h.field == field && !rc.allowed(h.rule, nodeTarget(n)) {
			return h.shown, true
		}
	}
	return nil, false
}

// localImageKeys are the driver_info and instance_info keys that name a
// kernel, ramdisk, ISO or image the conductor or its boot server reads.
var localImageKeys = []string{"kernel", "ramdisk", "iso", "image_source", "image", "bootloader", "boot_iso"}

// refuseLocalFiles refuses a project-scoped principal a file:// URL or a
// local path as any image the conductor would read (key under field): a
// project could otherwise make the boot server serve the server's files.
func (rc *call) refuseLocalFiles(field string, v any) error {
	if !rc.scoped() {
		return nil
	}
	var walk func(key string, v any) error
	walk = func(key string, v any) error {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				if err := walk(k, y); err != nil {
					return err
				}
			}
		case []any:
			for _, y := range x {
				if err := walk(key, y); err != nil {
					return err
				}
			}
		case string:
			if !imageKey(key) || !localRef(x) {
				return nil
			}
			return fault.New(fault.Forbidden, "A project-scoped principal may not set a local file as %s/%s: "+
				"use an http(s) URL or an image reference, or ask a system administrator.", field, key)
		}
		return nil
	}
	return walk(field, v)
}

// imageKey reports whether a driver_info/instance_info key names an image.
func imageKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range localImageKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// localRef reports whether s names a local file: a file: URL or an
// absolute or relative path (anything but a URL of another scheme or an
// image UUID/name the image service resolves).
func localRef(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	scheme, _, hasScheme := strings.Cut(s, ":")
	if hasScheme && !strings.ContainsAny(scheme, "/.\\") {
		return strings.EqualFold(scheme, "file")
	}
	return strings.ContainsAny(s, "/\\") || strings.HasPrefix(s, ".")
}

// rule is a guard of rules that read no target: resources of no node,
// whose Ironic defaults need system scope (a project is refused by the
// rule itself, with its name).
func rule(rules ...string) guard { return guard{rules: rules} }

// Guards shared by several routes.
var (
	// nodeList: node lists, the fleet views and the event stream show a
	// project its nodes (owner or lessee).
	nodeList = listRule("baremetal:node:list", "baremetal:node:list_all")
	// chassisNodes: a chassis's nodes, for system readers.
	chassisNodes = rule("baremetal:chassis:get", "baremetal:node:list_all")
)

func (k subject) String() string {
	return [...]string{"system-wide", "public", "node", "port's node", "connector's node", "target's node",
		"runbook", "record", "list"}[k]
}

// authorizeIdent checks rules on the node ident names, for a handler that
// found the node in the query: an unknown node is left to the handler's
// own 404.
func (rc *call) authorizeIdent(ident string, rules ...string) error {
	if rc.auth.who == nil {
		rc.auth.pending = false
		return nil
	}
	n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		rc.auth.pending = false
		if rc.scoped() {
			return fault.NodeNotFound(ident)
		}
		return rc.check(nil, rules...)
	} else if err != nil {
		return err
	}
	return rc.authorize(n, rules...)
}

// AuditNote is what the API tells the audit record of its request: the
// node it acted on, as the API resolved it (whatever the path's spelling).
type AuditNote struct{ Node string }

type auditKey struct{}

// WithAuditNote returns ctx carrying a note the API fills.
func WithAuditNote(ctx context.Context) (context.Context, *AuditNote) {
	n := &AuditNote{}
	return context.WithValue(ctx, auditKey{}, n), n
}

// noteNode fills the request's audit note, if any, with the node of its
// route: the one loaded for authorization, else the path's identifier as
// the API reads it.
func (rc *call) noteNode() {
	note, _ := rc.ctx.Value(auditKey{}).(*AuditNote)
	if note == nil || rc.r == nil {
		return
	}
	if rc.auth.node != nil {
		note.Node = rc.auth.node.UUID
		return
	}
	raw := rc.r.PathValue("ident")
	if raw == "" || !strings.HasPrefix(rc.r.Pattern, "/v1/nodes/{ident}") {
		return
	}
	if ident, err := (nodeAPI{rc.s}).plainNodeIdent(rc, raw); err == nil {
		note.Node = ident
	} else {
		note.Node = raw
	}
}
