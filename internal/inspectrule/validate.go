package inspectrule

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
)

// Phases are the inspection phases a rule may run in (Ironic's
// InspectionPhase).
var Phases = []string{"main"}

// MaxPriority is the highest priority of a user-defined rule.
const MaxPriority = 9999

// Validate is Ironic's validate_rule after the request schema (which the
// API checks): the phase, the priority range, then each condition's and
// action's arguments against its signature; the first bad arguments end
// it. Anvil also refuses the actions it does not run (port actions,
// api-call), saying why. The error's text is the message to answer.
func Validate(r *model.InspectionRule) error {
	var errs []string
	phase := r.Phase
	if phase == "" {
		phase = Phases[0]
	}
	if !slices.Contains(Phases, phase) {
		errs = append(errs, fmt.Sprintf("Invalid phase: %s. Valid phases are: %s", phase, strings.Join(Phases, ", ")))
	}
	if r.Priority < 0 {
		errs = append(errs, "Priority cannot be negative for user-defined rules.")
	}
	if r.Priority > MaxPriority {
		errs = append(errs, "Priority must be between 0 and 9999 for user-defined rules.")
	}
	for _, c := range r.Conditions {
		opText, _ := c["op"].(string)
		op, _, err := parseInverted(opText)
		if err != nil {
			return err
		}
		s, ok := operators[op]
		if !ok {
			return fmt.Errorf("Unsupported operator '%s'.", op)
		}
		if err := s.validate(argsOf(c)); err != nil {
			return err
		}
	}
	for _, a := range r.Actions {
		op, _ := a["op"].(string)
		s, ok := actions[op]
		if !ok {
			return fmt.Errorf("Unsupported action '%s'.", op)
		}
		if err := s.validate(argsOf(a)); err != nil {
			return err
		}
		if s.refused != "" {
			return fmt.Errorf("Unsupported action '%s': %s.", op, s.refused)
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errors.New(errs[0])
	}
	return fmt.Errorf("Multiple validation errors occurred: %s", strings.Join(errs, "; "))
}

// argsOf is an operation's args (Ironic's operation.get('args', {})).
func argsOf(op model.JSON) any {
	if a, ok := op["args"]; ok {
		return a
	}
	return map[string]any{}
}
