package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// The rules of a PATCH depend on the fields it touches, as Ironic's
// NodesController._authorize_patch_and_get_node and RunbooksController's
// _authorize_patch_and_get_runbook check them. They are derived from the
// operations the API parsed (patchOp.field: the decoded first segment of
// each path), never from a second reading of the body.

// nodePatchRule is the rule of one operation: the rule of the field it
// touches in the node field table (node_fields.go), baremetal:node:update
// when the field names none.
func nodePatchRule(op patchOp) string {
	f := op.field()
	if f == "automated_clean" {
		if b, ok := boolValue(op.Value); ok && !b && op.Op != "remove" {
			return "baremetal:node:disable_cleaning"
		}
	}
	if r := nodeFields.patchRule(f); r != "" {
		return r
	}
	return "baremetal:node:update"
}

// nodePatchRules are the rules of a node PATCH, one per field kind,
// baremetal:node:update last when an operation names no other (or there
// is none), as Ironic checks them.
func nodePatchRules(ops []patchOp) []string {
	var rules []string
	generic := len(ops) == 0
	for _, op := range ops {
		r := nodePatchRule(op)
		if r == "baremetal:node:update" {
			generic = true
		} else if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	if generic {
		rules = append(rules, "baremetal:node:update")
	}
	return rules
}

// runbookPatchRules: update:owner and update:public for those fields, then
// update for any other (or no operation).
func runbookPatchRules(ops []patchOp) []string {
	var rules []string
	generic := len(ops) == 0
	for _, op := range ops {
		r := "baremetal:runbook:update"
		switch op.field() {
		case "owner":
			r = "baremetal:runbook:update:owner"
		case "public":
			r = "baremetal:runbook:update:public"
		default:
			generic = true
			continue
		}
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	if generic {
		rules = append(rules, "baremetal:runbook:update")
	}
	return rules
}

// boolValue reads a JSON value as Ironic's bool_from_string does; ok is
// false for anything that is not a boolean.
func boolValue(v any) (b, ok bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		return pyrepr.BoolFromString(x)
	}
	return false, false
}

// authorizeNodePatch checks the rules of a node PATCH's operations on the
// route's node; a principal that may not give an active node another
// owner (baremetal:node:update_owner_provisioned) is answered 409, as
// Ironic; a project may not point an image at a local file.
func (rc *call) authorizeNodePatch(ops []patchOp) error {
	rules := nodePatchRules(ops)
	if err := rc.authorize(nil, rules...); err != nil {
		return err
	}
	for _, op := range ops {
		if f := op.field(); f == "driver_info" || f == "instance_info" {
			key := strings.TrimPrefix(strings.TrimPrefix(op.Path, "/"+f), "/")
			v := op.Value
			if key != "" {
				v = map[string]any{decodePointerToken(strings.SplitN(key, "/", 2)[0]): op.Value}
			}
			if err := rc.refuseLocalFiles(f, v); err != nil {
				return err
			}
		}
	}
	if rc.auth.who == nil || !slices.Contains(rules, "baremetal:node:update:owner") {
		return nil
	}
	n, _, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return err
	}
	if n.ProvisionState == fsm.Active && !rc.allowed("baremetal:node:update_owner_provisioned", nodeTarget(n)) {
		return fault.New(fault.Conflict, "Cannot update owner of node \"%s\" while it is in state \"%s\".", n.UUID, fsm.Active)
	}
	return nil
}

// authorizeProvision checks a provision request's rules on node n, as
// Ironic's provision controller: set_provision_state, its clean_steps and
// service_steps sub-rules for requests carrying steps, and
// baremetal:runbook:use on a named runbook (an unknown one is the
// conductor's 404, after).
func (rc *call) authorizeProvision(n *model.Node, req conductor.ProvisionRequest) error {
	rules := []string{"baremetal:node:set_provision_state"}
	if len(req.CleanSteps) > 0 {
		rules = append(rules, "baremetal:node:set_provision_state:clean_steps")
	}
	if len(req.ServiceSteps) > 0 {
		rules = append(rules, "baremetal:node:set_provision_state:service_steps")
	}
	if err := rc.authorize(n, rules...); err != nil || req.Runbook == "" || rc.auth.who == nil {
		return err
	}
	rb, err := rc.s.cfg.Catalog.Runbooks().GetRunbook(rc.ctx, req.Runbook)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	return rc.check(runbookTarget(rb), "baremetal:runbook:use")
}
