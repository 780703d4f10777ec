package records_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/records"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
)

func newService(t *testing.T) (*records.Service, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "anvil.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := func() time.Time { return time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC) }
	return records.New(st, now, slog.New(slog.DiscardHandler)), st
}

// faultOf is err's fault kind and text, failing the test for a plain error.
func faultOf(t *testing.T, err error) (fault.Kind, string) {
	t.Helper()
	var f *fault.Error
	if !errors.As(err, &f) {
		t.Fatalf("not a fault: %v", err)
	}
	return f.Kind, err.Error()
}

// TestWrites: each record kind through the one helper, with Ironic's texts:
// created with the service's clock, a duplicate name or UUID 409, a rename
// onto another 409, an update of a copy, a missing one 404 on update and
// delete, a chassis nodes name 400.
func TestWrites(t *testing.T) {
	ctx := context.Background()
	s, st := newService(t)
	step := model.DeployStep{Interface: "raid", Step: "apply_configuration", Args: model.JSON{}, Priority: 1}

	a := &model.DeployTemplate{Name: "CUSTOM_A", Steps: []model.DeployStep{step}}
	if err := s.CreateDeployTemplate(ctx, a); err != nil || a.CreatedAt.Hour() != 4 {
		t.Fatalf("create: %v, created_at %v", err, a.CreatedAt)
	}
	if err := s.CreateDeployTemplate(ctx, &model.DeployTemplate{Name: "CUSTOM_B", Steps: []model.DeployStep{step}}); err != nil {
		t.Fatal(err)
	}
	if k, msg := faultOf(t, s.CreateDeployTemplate(ctx, &model.DeployTemplate{Name: "CUSTOM_A", Steps: []model.DeployStep{step}})); k != fault.Conflict || msg != "A deploy template with name CUSTOM_A already exists." {
		t.Errorf("duplicate name: %v %s", k, msg)
	}
	if k, msg := faultOf(t, s.CreateDeployTemplate(ctx, &model.DeployTemplate{UUID: a.UUID, Name: "CUSTOM_C", Steps: []model.DeployStep{step}})); k != fault.Conflict || msg != "A deploy template with UUID "+a.UUID+" already exists." {
		t.Errorf("duplicate uuid: %v %s", k, msg)
	}
	_, err := s.UpdateDeployTemplate(ctx, "CUSTOM_B", func(tp *model.DeployTemplate) error { tp.Name = "CUSTOM_A"; return nil })
	if k, _ := faultOf(t, err); k != fault.Conflict {
		t.Errorf("rename onto another: %v", err)
	}
	got, err := s.UpdateDeployTemplate(ctx, "CUSTOM_B", func(tp *model.DeployTemplate) error { tp.Steps[0].Priority = 7; return nil })
	if err != nil || got.Steps[0].Priority != 7 {
		t.Fatalf("update: %v %+v", err, got)
	}
	if k, msg := faultOf(t, s.DeleteDeployTemplate(ctx, "CUSTOM_X")); k != fault.NotFound || msg != "Deploy template CUSTOM_X could not be found." {
		t.Errorf("delete unknown: %v %s", k, msg)
	}
	if err := s.DeleteDeployTemplate(ctx, "CUSTOM_A"); err != nil {
		t.Errorf("delete by name: %v", err)
	}

	r := &model.Runbook{Name: "CUSTOM_RB", Steps: []model.RunbookStep{{Interface: "deploy", Step: "erase_devices", Args: model.JSON{}, Order: 0}}}
	if err := s.CreateRunbook(ctx, r); err != nil {
		t.Fatal(err)
	}
	if k, msg := faultOf(t, s.CreateRunbook(ctx, &model.Runbook{Name: "CUSTOM_RB"})); k != fault.Conflict || msg != "A runbook with name CUSTOM_RB already exists." {
		t.Errorf("duplicate runbook: %v %s", k, msg)
	}
	if _, err := s.UpdateRunbook(ctx, "CUSTOM_NONE", func(*model.Runbook) error { return nil }); err == nil {
		t.Error("update of a missing runbook succeeded")
	} else if k, msg := faultOf(t, err); k != fault.NotFound || msg != "Runbook CUSTOM_NONE could not be found." {
		t.Errorf("update missing runbook: %v %s", k, msg)
	}
	applyErr := fault.New(fault.Invalid, "refused by apply")
	if _, err := s.UpdateRunbook(ctx, r.UUID, func(*model.Runbook) error { return applyErr }); !errors.Is(err, applyErr) {
		t.Errorf("apply's error: %v", err)
	}

	rule := &model.InspectionRule{Description: "one", Phase: "main"}
	if err := s.CreateInspectionRule(ctx, rule); err != nil {
		t.Fatal(err)
	}
	if k, msg := faultOf(t, s.CreateInspectionRule(ctx, &model.InspectionRule{UUID: rule.UUID, Phase: "main"})); k != fault.Conflict || msg != "A rule with UUID "+rule.UUID+" already exists." {
		t.Errorf("duplicate rule: %v %s", k, msg)
	}
	if err := s.DeleteInspectionRules(ctx); err != nil {
		t.Fatal(err)
	}
	if k, msg := faultOf(t, s.DeleteInspectionRule(ctx, rule.UUID)); k != fault.NotFound || msg != "Rule "+rule.UUID+" could not be found." {
		t.Errorf("rule after delete-all: %v %s", k, msg)
	}

	ch := &model.Chassis{Description: "rack 1"}
	if err := s.CreateChassis(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if k, msg := faultOf(t, s.CreateChassis(ctx, &model.Chassis{UUID: ch.UUID})); k != fault.Conflict || msg != "A chassis with UUID "+ch.UUID+" already exists." {
		t.Errorf("duplicate chassis: %v %s", k, msg)
	}
	if err := st.Nodes().CreateNode(ctx, &model.Node{Name: "in-rack", Driver: "fake-hardware", ChassisUUID: ch.UUID}); err != nil {
		t.Fatal(err)
	}
	if k, msg := faultOf(t, s.DeleteChassis(ctx, ch.UUID)); k != fault.Invalid || msg != "Cannot complete the requested action because chassis "+ch.UUID+" contains nodes." {
		t.Errorf("delete a chassis nodes name: %v %s", k, msg)
	}
	got2, err := s.UpdateChassis(ctx, ch.UUID, func(c *model.Chassis) error { c.Extra = model.JSON{"row": "B"}; return nil })
	if err != nil || got2.Extra["row"] != "B" {
		t.Errorf("chassis update: %v %+v", err, got2)
	}
}

// UpdateWithRetry applies the change again to a fresh copy when the save
// lost a race, and answers Conflict once it lost five.
func TestUpdateWithRetry(t *testing.T) {
	type rec struct{ loads, n int }
	stored := &rec{}
	load := func() (*rec, error) { stored.loads++; cp := *stored; return &cp, nil }
	apply := func(r *rec) error { r.n++; return nil }
	lose := 2
	save := func(r *rec) error {
		if lose > 0 {
			lose--
			return store.ErrStale
		}
		stored.n = r.n
		return nil
	}
	what := func(*rec) string { return "Thing x" }
	got, err := records.UpdateWithRetry(load, apply, save, what)
	if err != nil || got.n != 1 || stored.loads != 3 {
		t.Fatalf("after two lost races: %+v %v, %d loads; want n=1 after 3 loads", got, err, stored.loads)
	}
	lose = 100
	_, err = records.UpdateWithRetry(load, apply, save, what)
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.Conflict || f.Msg != "Thing x was changed by another request; try again." {
		t.Fatalf("always racing: %v", err)
	}
	if lose != 95 {
		t.Errorf("saves tried: %d, want 5", 100-lose)
	}
}
