package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// projectPolicy is Ironic's default policy for project-scoped principals
// (a jwt token with a project claim), for the routes it knows; every other
// route requires system scope. System-scoped principals (http_basic users,
// tokens without a project) pass untouched.
//
// A node is visible to project P when its owner or its lessee is P;
// others are answered 404, as Ironic does. Node lists are narrowed to
// ?project=P. Port routes follow their node. The rules (Ironic's policy
// names, with who may act on a visible node) are policyRules.
type projectPolicy struct {
	nodes nodeReader
	next  http.Handler
}

// nodeReader is what the policy reads to decide.
type nodeReader interface {
	GetNode(ctx context.Context, ident string) (*model.Node, error)
	GetPort(ctx context.Context, ident string) (*model.Port, error)
}

// access is a project principal's relation to one node.
type access struct {
	owner, lessee bool
	who           auth.Principal
}

func (a access) ownerMember() bool {
	return a.owner && (a.who.HasRole(auth.RoleMember) || a.ownerAdmin())
}
func (a access) ownerAdmin() bool  { return a.owner && a.who.HasRole(auth.RoleAdmin) }
func (a access) lesseeAdmin() bool { return a.lessee && a.who.HasRole(auth.RoleAdmin) }
func (a access) reader() bool      { return a.owner || a.lessee }

// policyRule is one action on a visible node: Ironic's policy name and its
// default check for project scope.
type policyRule struct {
	name  string
	allow func(access) bool
}

// policyRules maps "METHOD /path pattern" ({node}, {port}) to the rule.
// Reads need the node visible (PROJECT_READER); writes as below.
var policyRules = map[string]policyRule{
	"GET /v1/nodes/{node}/*":                      {"baremetal:node:get", access.reader},
	"PATCH /v1/nodes/{node}":                      {"baremetal:node:update (owner's members; lessees may not)", access.ownerMember},
	"DELETE /v1/nodes/{node}":                     {"baremetal:node:delete (system admin only)", func(access) bool { return false }},
	"PUT /v1/nodes/{node}/states/provision":       {"baremetal:node:set_provision_state", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
	"PUT /v1/nodes/{node}/states/power":           {"baremetal:node:set_power_state", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
	"PUT /v1/nodes/{node}/maintenance":            {"baremetal:node:set_maintenance", access.ownerAdmin},
	"DELETE /v1/nodes/{node}/maintenance":         {"baremetal:node:clear_maintenance", access.ownerAdmin},
	"PUT /v1/nodes/{node}/management/boot_device": {"baremetal:node:set_boot_device", access.ownerAdmin},
	"PUT /v1/nodes/{node}/management/inject_nmi":  {"baremetal:node:inject_nmi", access.ownerAdmin},
	"GET /v1/ports/{port}":                        {"baremetal:port:get", access.reader},
	"PATCH /v1/ports/{port}":                      {"baremetal:port:update", access.ownerAdmin},
	"DELETE /v1/ports/{port}":                     {"baremetal:port:delete", access.ownerAdmin},
	"POST /v1/ports":                              {"baremetal:port:create", access.ownerAdmin},
	"GET /v1/ports":                               {"baremetal:port:list (of one node: ?node=)", access.reader},
	"POST /v1/nodes/{node}/vifs":                  {"baremetal:node:vif:attach", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
	"DELETE /v1/nodes/{node}/vifs/{id}":           {"baremetal:node:vif:detach", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
	"PUT /v1/nodes/{node}/traits":                 {"baremetal:node:traits:set", access.ownerAdmin},
	"PUT /v1/nodes/{node}/traits/{id}":            {"baremetal:node:traits:set", access.ownerAdmin},
	"DELETE /v1/nodes/{node}/traits":              {"baremetal:node:traits:delete", access.ownerAdmin},
	"DELETE /v1/nodes/{node}/traits/{id}":         {"baremetal:node:traits:delete", access.ownerAdmin},
	"POST /v1/nodes/{node}/vmedia":                {"baremetal:node:vmedia:attach", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
	"DELETE /v1/nodes/{node}/vmedia":              {"baremetal:node:vmedia:detach", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
	"GET /v1/nodes/validate":                      {"baremetal:node:validate", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
	"GET /v1/nodes/{node}/validate":               {"baremetal:node:validate", func(a access) bool { return a.ownerMember() || a.lesseeAdmin() }},
}

// Besides policyRules: GET /v1/nodes and /v1/nodes/detail are narrowed to
// ?project=P; POST /v1/nodes (baremetal:node:create) is for system admins;
// every other route (drivers, conductors, chassis, portgroups, allocations,
// the fleet report, the event stream, /metrics, resources this policy does
// not know) needs system scope.

func (p *projectPolicy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who, ok := auth.PrincipalOf(r.Context())
	if !ok || !who.Scoped() || auth.PublicPath(r.URL.Path) {
		p.next.ServeHTTP(w, r)
		return
	}
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
	switch {
	case len(seg) == 2 && seg[1] == "nodes" || len(seg) == 3 && seg[1] == "nodes" && seg[2] == "detail":
		if m != http.MethodGet {
			return denied("baremetal:node:create")
		}
		q := r.URL.Query()
		q.Set("project", who.Project) // owner or lessee is the project
		r.URL.RawQuery = q.Encode()
		return 0, ""
	case len(seg) == 3 && seg[1] == "nodes" && seg[2] == "validate":
		return p.onNode(r, who, q1(r, "node"), "GET /v1/nodes/validate")
	case len(seg) >= 3 && seg[1] == "nodes":
		key := m + " /v1/nodes/{node}"
		if len(seg) == 5 && (seg[3] == "vifs" || seg[3] == "traits") {
			seg[4] = "{id}" // one VIF or trait: the rule of the collection's member
		}
		if rest := strings.Join(seg[3:], "/"); rest != "" {
			key += "/" + rest
		}
		if m == http.MethodGet && (len(seg) < 4 || seg[3] != "vendor_passthru") {
			key = "GET /v1/nodes/{node}/*" // vendor passthru is system-scoped, whatever the method
		}
		return p.onNode(r, who, seg[2], key)
	case len(seg) == 3 && seg[1] == "ports" && seg[2] != "detail":
		port, err := p.nodes.GetPort(r.Context(), seg[2])
		if err != nil {
			return notFound("Port", seg[2], err)
		}
		return p.onNode(r, who, port.NodeUUID, m+" /v1/ports/{port}")
	case (len(seg) == 2 || len(seg) == 3 && seg[2] == "detail") && seg[1] == "ports":
		if m == http.MethodPost {
			return p.onNode(r, who, bodyNode(r), "POST /v1/ports")
		}
		node := q1(r, "node")
		if node == "" {
			node = q1(r, "node_uuid")
		}
		if node == "" {
			return http.StatusForbidden, "A project-scoped token lists the ports of one node: add ?node=<node>."
		}
		return p.onNode(r, who, node, "GET /v1/ports")
	}
	return http.StatusForbidden, "This resource requires a system-scoped token (one without a project)."
}

// onNode applies rule key to the node ident: 404 when not visible.
func (p *projectPolicy) onNode(r *http.Request, who auth.Principal, ident, key string) (int, string) {
	rule, known := policyRules[key]
	if !known {
		return http.StatusForbidden, "This action requires a system-scoped token (one without a project)."
	}
	if ident == "" {
		return http.StatusBadRequest, "Missing node."
	}
	n, err := p.nodes.GetNode(r.Context(), ident)
	if err != nil {
		return notFound("Node", ident, err)
	}
	a := access{owner: n.Owner == who.Project, lessee: n.Lessee == who.Project && n.Owner != who.Project, who: who}
	if !a.reader() {
		return http.StatusNotFound, "Node " + ident + " could not be found."
	}
	if !rule.allow(a) {
		return denied(rule.name)
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

// bodyNode reads node_uuid from a JSON body (at most 1 MiB, as the API
// caps it) and puts the body back for the handler.
func bodyNode(r *http.Request) string {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1)) // one more: the API answers 413
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		return ""
	}
	var doc struct {
		NodeUUID string `json:"node_uuid"`
	}
	_ = json.Unmarshal(raw, &doc)
	return doc.NodeUUID
}
