// Package records is the service that changes the records with no node
// lock — chassis, deploy templates, runbooks and inspection rules — on one
// generic helper (Kind): create with Ironic's duplicate texts, update of a
// copy with the store's version check retried, delete, each with Ironic's
// not-found text. The API's Records interface is this service; the
// conductor only reads these records (a deploy plans with the templates, a
// provision request runs a runbook, an inspection applies the rules).
package records

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Store is what the service writes through.
type Store interface {
	Chassis() store.ChassisStore
	DeployTemplates() store.DeployTemplateStore
	Runbooks() store.RunbookStore
	InspectionRules() store.InspectionRuleStore
}

// Service changes the records with no node lock.
type Service struct {
	st  Store
	now func() time.Time
	log *slog.Logger

	chassis   Kind[model.Chassis]
	templates Kind[model.DeployTemplate]
	runbooks  Kind[model.Runbook]
	rules     Kind[model.InspectionRule]
}

// New returns the service over st; now stamps created_at (nil: time.Now).
func New(st Store, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Service{st: st, now: now, log: log}
	ch, dt, rb, ir := st.Chassis(), st.DeployTemplates(), st.Runbooks(), st.InspectionRules()
	s.chassis = Kind[model.Chassis]{
		Name: "Chassis", Noun: "chassis", Now: now,
		Get: ch.GetChassis, Insert: ch.CreateChassis, Save: ch.UpdateChassis, Remove: ch.DeleteChassis,
		UUID: func(c *model.Chassis) string { return c.UUID },
		Stamp: func(c *model.Chassis, t time.Time) {
			if c.CreatedAt.IsZero() {
				c.CreatedAt = t
			}
		},
		Copy: func(c *model.Chassis) *model.Chassis {
			cp := *c
			cp.Extra = maps.Clone(c.Extra)
			return &cp
		},
		RemoveError: func(err error, ident string) error {
			if errors.Is(err, store.ErrChassisNotEmpty) {
				return fault.New(fault.Invalid, "Cannot complete the requested action because chassis %s contains nodes.", ident)
			}
			return err
		},
	}
	s.templates = Kind[model.DeployTemplate]{
		Name: "Deploy template", Noun: "deploy template", Now: now,
		Get: dt.GetDeployTemplate, Insert: dt.CreateDeployTemplate, Save: dt.UpdateDeployTemplate, Remove: dt.DeleteDeployTemplate,
		UUID: func(t *model.DeployTemplate) string { return t.UUID },
		Stamp: func(t *model.DeployTemplate, now time.Time) {
			if t.CreatedAt.IsZero() {
				t.CreatedAt = now
			}
		},
		Copy: func(t *model.DeployTemplate) *model.DeployTemplate {
			cp := *t
			cp.Steps = slices.Clone(t.Steps)
			return &cp
		},
	}
	s.runbooks = Kind[model.Runbook]{
		Name: "Runbook", Noun: "runbook", Now: now,
		Get: rb.GetRunbook, Insert: rb.CreateRunbook, Save: rb.UpdateRunbook, Remove: rb.DeleteRunbook,
		UUID: func(r *model.Runbook) string { return r.UUID },
		Stamp: func(r *model.Runbook, now time.Time) {
			if r.CreatedAt.IsZero() {
				r.CreatedAt = now
			}
		},
		Copy: func(r *model.Runbook) *model.Runbook {
			cp := *r
			cp.Steps = slices.Clone(r.Steps)
			return &cp
		},
	}
	s.rules = Kind[model.InspectionRule]{
		Name: "Rule", Noun: "rule", Now: now,
		Get: ir.GetInspectionRule, Insert: ir.CreateInspectionRule, Save: ir.UpdateInspectionRule, Remove: ir.DeleteInspectionRule,
		UUID: func(r *model.InspectionRule) string { return r.UUID },
		Stamp: func(r *model.InspectionRule, now time.Time) {
			if r.CreatedAt.IsZero() {
				r.CreatedAt = now
			}
		},
		Copy: func(r *model.InspectionRule) *model.InspectionRule {
			cp := *r
			cp.Conditions, cp.Actions = slices.Clone(r.Conditions), slices.Clone(r.Actions)
			return &cp
		},
	}
	return s
}

// Chassis (Ironic's chassis): a node names its chassis (checked when the
// node is written, by the API); a chassis nodes name cannot be deleted
// (fault Invalid, Ironic's ChassisNotEmpty).

func (s *Service) CreateChassis(ctx context.Context, c *model.Chassis) error {
	return s.chassis.Create(ctx, c)
}

func (s *Service) UpdateChassis(ctx context.Context, id string, apply func(*model.Chassis) error) (*model.Chassis, error) {
	return s.chassis.Update(ctx, id, apply)
}

func (s *Service) DeleteChassis(ctx context.Context, id string) error {
	return s.chassis.Delete(ctx, id)
}

// Deploy templates (Ironic's deploy_template, API 1.55): a deploy reads
// them when it plans its steps.

func (s *Service) CreateDeployTemplate(ctx context.Context, t *model.DeployTemplate) error {
	return s.templates.Create(ctx, t)
}

func (s *Service) UpdateDeployTemplate(ctx context.Context, ident string, apply func(*model.DeployTemplate) error) (*model.DeployTemplate, error) {
	return s.templates.Update(ctx, ident, apply)
}

func (s *Service) DeleteDeployTemplate(ctx context.Context, ident string) error {
	return s.templates.Delete(ctx, ident)
}

// Runbooks (Ironic's runbook, API 1.92): a provision request naming one
// reads it under the node's lock.

func (s *Service) CreateRunbook(ctx context.Context, r *model.Runbook) error {
	return s.runbooks.Create(ctx, r)
}

func (s *Service) UpdateRunbook(ctx context.Context, ident string, apply func(*model.Runbook) error) (*model.Runbook, error) {
	return s.runbooks.Update(ctx, ident, apply)
}

func (s *Service) DeleteRunbook(ctx context.Context, ident string) error {
	return s.runbooks.Delete(ctx, ident)
}

// Inspection rules (Ironic's inspection_rule, API 1.96): an inspection
// applies them when it has stored its data.

func (s *Service) CreateInspectionRule(ctx context.Context, r *model.InspectionRule) error {
	return s.rules.Create(ctx, r)
}

func (s *Service) UpdateInspectionRule(ctx context.Context, id string, apply func(*model.InspectionRule) error) (*model.InspectionRule, error) {
	return s.rules.Update(ctx, id, apply)
}

func (s *Service) DeleteInspectionRule(ctx context.Context, id string) error {
	return s.rules.Delete(ctx, id)
}

// DeleteInspectionRules removes every rule (Anvil has no built-in rules,
// which Ironic's delete-all keeps).
func (s *Service) DeleteInspectionRules(ctx context.Context) error {
	n, err := s.st.InspectionRules().DeleteInspectionRules(ctx)
	if err == nil {
		s.log.Info("inspection rules deleted", "count", n)
	}
	return err
}
