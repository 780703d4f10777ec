package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/model"
)

// The runbook rules: Ironic master's defaults for baremetal:runbook:*
// (ironic/common/policy.py, runbook_policies; runbooks are newer than
// Ironic 21.4) for project-scoped principals. A subject's owner is the
// runbook's owner being the principal's project. Ironic's RUNBOOK_ADMIN and
// RUNBOOK_CREATOR name role:manager, which Anvil's tokens do not carry:
// Keystone's default implied roles make admin a manager, so here it is the
// admin role (level 3).
var runbookRules = map[string]string{
	"baremetal:runbook:get":           "RUNBOOK_READER",
	"baremetal:runbook:list":          "API_READER",
	"baremetal:runbook:list_all":      "SYSTEM_READER",
	"baremetal:runbook:create":        "RUNBOOK_CREATOR",
	"baremetal:runbook:delete":        "RUNBOOK_ADMIN",
	"baremetal:runbook:update":        "RUNBOOK_ADMIN",
	"baremetal:runbook:update:public": "SYSTEM_MEMBER",
	"baremetal:runbook:update:owner":  "SYSTEM_MEMBER",
	"baremetal:runbook:use":           "RUNBOOK_ADMIN",
}

// runbookSubject relates who to runbook r.
func runbookSubject(who auth.Principal, r *model.Runbook) subject {
	s := subjectOf(who, &model.Node{})
	s.owner = r.Owner != "" && r.Owner == who.Project
	return s
}

// onRunbooks decides a project-scoped request under /v1/runbooks, as
// Ironic's RunbooksController checks it: the list is narrowed to the
// project's runbooks and the public ones (baremetal:runbook:list; another
// project's needs list_all); a runbook the principal may not read is
// still shown when public; a PATCH needs the rule of each path it
// touches (owner, public, else update). An unknown runbook is the API's
// 404.
func (p *projectPolicy) onRunbooks(r *http.Request, who auth.Principal, seg []string, m string) (int, string) {
	s := runbookSubject(who, &model.Runbook{})
	if len(seg) == 2 {
		switch m {
		case http.MethodGet:
			if q := q1(r, "project"); q != "" && q != who.Project {
				return denied("baremetal:runbook:list_all")
			}
			if !allowed("baremetal:runbook:list", s) {
				return denied("baremetal:runbook:list")
			}
			q := r.URL.Query()
			q.Set("project", who.Project)
			r.URL.RawQuery = q.Encode()
			return 0, ""
		case http.MethodPost:
			if !allowed("baremetal:runbook:create", s) {
				return denied("baremetal:runbook:create")
			}
			return 0, "" // the API makes the project the owner (api.WithProject)
		}
		return 0, "" // the API answers 405
	}
	if len(seg) != 3 {
		return http.StatusForbidden, "This resource requires a system-scoped token (one without a project)."
	}
	rb, err := p.nodes.GetRunbook(r.Context(), seg[2])
	if err != nil {
		if st, msg := notFound("Runbook", seg[2], err); st != http.StatusNotFound {
			return st, msg
		}
		return 0, "" // the API answers 404, or 400 for a bad ident
	}
	s = runbookSubject(who, rb)
	var rules []string
	switch m {
	case http.MethodGet:
		if !allowed("baremetal:runbook:get", s) && !rb.Public {
			return denied("baremetal:runbook:get")
		}
		return 0, ""
	case http.MethodPatch:
		rules = runbookPatchRules(r)
	case http.MethodDelete:
		rules = []string{"baremetal:runbook:delete"}
	default:
		return 0, "" // the API answers 405
	}
	for _, rule := range rules {
		if !allowed(rule, s) {
			return denied(rule)
		}
	}
	return 0, ""
}

// runbookPatchRules are the rules a runbook PATCH needs, as Ironic's
// _authorize_patch_and_get_runbook: update:owner and update:public for the
// paths under /owner and /public, then update for any other path (or no
// operation).
func runbookPatchRules(r *http.Request) []string {
	var ops []struct {
		Path string `json:"path"`
	}
	raw, _ := peekBody(r)
	_ = json.Unmarshal(raw, &ops)
	var rules []string
	generic := false
	for _, op := range ops {
		switch {
		case strings.HasPrefix(op.Path, "/owner"):
			rules = append(rules, "baremetal:runbook:update:owner")
		case strings.HasPrefix(op.Path, "/public"):
			rules = append(rules, "baremetal:runbook:update:public")
		default:
			generic = true
		}
	}
	if generic || len(rules) == 0 {
		rules = append(rules, "baremetal:runbook:update")
	}
	return slices.Compact(rules)
}

// runbookUse is baremetal:runbook:use for a provision request naming a
// runbook: the principal must be allowed to use it (an unknown runbook is
// the API's 404).
func (p *projectPolicy) runbookUse(r *http.Request, who auth.Principal) (int, string) {
	raw, err := peekBody(r)
	if err != nil {
		return 0, ""
	}
	var body struct {
		Runbook any `json:"runbook"`
	}
	_ = json.Unmarshal(raw, &body)
	ident, _ := body.Runbook.(string)
	if ident == "" {
		return 0, ""
	}
	rb, err := p.nodes.GetRunbook(r.Context(), ident)
	if err != nil {
		if st, msg := notFound("Runbook", ident, err); st != http.StatusNotFound {
			return st, msg
		}
		return 0, ""
	}
	if !allowed("baremetal:runbook:use", runbookSubject(who, rb)) {
		return denied("baremetal:runbook:use")
	}
	return 0, ""
}
