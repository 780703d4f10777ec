package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Migrator is implemented by stores whose schema can be migrated. When the
// store under test implements it, Run checks migrate up → down → up.
type Migrator interface {
	// MigrateUp applies every pending migration.
	MigrateUp(ctx context.Context) error
	// MigrateDown reverts every applied migration, dropping all data.
	MigrateDown(ctx context.Context) error
}

// Run runs the conformance suite. open must return a fresh, empty, migrated
// store each time it is called (subtests run in parallel, each on its own
// store); Run closes every store it gets.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	su := suite{open: open}
	groups := []struct {
		name string
		run  func(*testing.T, suite)
	}{
		{"Nodes", testNodes},
		{"Locks", testLocks},
		{"ListNodes", testListNodes},
		{"Ports", testPorts},
		{"Portgroups", testPortgroups},
		{"Allocations", testAllocations},
		{"Conductors", testConductors},
		{"History", testHistory},
		{"Settings", testSettings},
		{"DeployTemplates", testDeployTemplates},
		{"Runbooks", testRunbooks},
		{"Chassis", testChassis},
		{"Volumes", testVolumes},
		{"InspectionRules", testInspectionRules},
		{"Sessions", testSessions},
		{"Diagnoses", testDiagnoses},
		{"Records", testRecords},
		{"Migrate", testMigrate},
		{"Load", testLoad},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, su)
		})
	}
}

type suite struct {
	open func(t *testing.T) store.Store
}

// fresh opens an empty store, closed when t ends.
func (su suite) fresh(t *testing.T) store.Store {
	t.Helper()
	s := su.open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// scenario is one named subtest on a fresh store.
type scenario struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// runScenarios runs each scenario in parallel on its own store.
func runScenarios(t *testing.T, su suite, scenarios []scenario) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, su.fresh(t))
		})
	}
}

func ptr[T any](v T) *T { return &v }

// newNode is a minimal enrolled node.
func newNode(name string) *model.Node {
	return &model.Node{UUID: uuid.NewString(), Name: name, Driver: "fake-hardware",
		ProvisionState: "enroll", PowerState: "power off"}
}

func mustCreateNode(t *testing.T, s store.Store, n *model.Node) *model.Node {
	t.Helper()
	if err := s.Nodes().CreateNode(t.Context(), n); err != nil {
		t.Fatalf("CreateNode(%s): %v", n.Name, err)
	}
	return n
}

func mustGetNode(t *testing.T, s store.Store, ident string) *model.Node {
	t.Helper()
	n, err := s.Nodes().GetNode(t.Context(), ident)
	if err != nil {
		t.Fatalf("GetNode(%s): %v", ident, err)
	}
	return n
}

func newPort(node, mac string) *model.Port {
	return &model.Port{UUID: uuid.NewString(), NodeUUID: node, Address: mac, PXEEnabled: true}
}

func mustCreatePort(t *testing.T, s store.Store, p *model.Port) *model.Port {
	t.Helper()
	if err := s.Ports().CreatePort(t.Context(), p); err != nil {
		t.Fatalf("CreatePort(%s): %v", p.Address, err)
	}
	return p
}

// wantErr fails unless errors.Is(err, target) (target nil: err must be nil).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	switch {
	case target == nil && err != nil:
		t.Fatalf("%s: unexpected error %v", what, err)
	case target != nil && !errors.Is(err, target):
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// wantDuplicate fails unless err is a *store.DuplicateError for field=value.
func wantDuplicate(t *testing.T, what string, err error, field, value string) {
	t.Helper()
	var dup *store.DuplicateError
	if !errors.As(err, &dup) || !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("%s: error %v, want *store.DuplicateError", what, err)
	}
	if dup.Field != field || dup.Value != value {
		t.Fatalf("%s: duplicate %s=%q, want %s=%q", what, dup.Field, dup.Value, field, value)
	}
}

// wantLocked fails unless err is a *store.LockedError naming node and holder.
func wantLocked(t *testing.T, what string, err error, node, holder string) {
	t.Helper()
	var le *store.LockedError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrLocked) {
		t.Fatalf("%s: error %v, want *store.LockedError", what, err)
	}
	if le.Node != node || le.Holder != holder {
		t.Fatalf("%s: locked %s by %q, want %s by %q", what, le.Node, le.Holder, node, holder)
	}
}

// wantEqual compares with reflect.DeepEqual and prints both on mismatch.
func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// stamp is a time with nanoseconds in a zone that is not UTC: stores must
// give it back in UTC, truncated to microseconds.
func stamp(hours int) time.Time {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	return time.Date(2024, 2, 29, 13, 14, 15, 123456789, zone).Add(time.Duration(hours) * time.Hour)
}

// stored is t as a store returns it.
func stored(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// fullNode sets every stored field of model.Node (checked by allSet).
func fullNode() *model.Node {
	js := func(k string) model.JSON {
		return model.JSON{k: "v", "n": 1.5, "b": true, "nil": nil,
			"list": []any{"a", 2.0, false}, "obj": map[string]any{"deep": "x"}}
	}
	return &model.Node{
		UUID: uuid.NewString(), Name: "full", Driver: "redfish",
		DriverInfo: js("redfish_address"), DriverInternalInfo: js("agent_url"),
		Properties: js("cpus"), InstanceInfo: js("image_source"), Extra: js("extra"),
		InstanceUUID: uuid.NewString(), ChassisUUID: uuid.NewString(),
		ResourceClass: "gpu", Owner: "project-a", Lessee: "project-b",
		Description: "rack 4, unit 2 — ünïcode", ConductorGroup: "west", Shard: "s1",
		ParentNode: uuid.NewString(), Traits: []string{"CUSTOM_A", "HW_CPU_X86_AVX2"},
		AllocationUUID: uuid.NewString(),
		Interfaces: model.Interfaces{Bios: "no-bios", Boot: "ipxe", Console: "no-console",
			Deploy: "direct", Firmware: "redfish", Inspect: "agent", Management: "redfish",
			Network: "flat", Power: "redfish", Raid: "agent", Rescue: "agent",
			Storage: "noop", Vendor: "redfish"},
		ProvisionState: "active", TargetProvisionState: "deleted",
		ProvisionUpdatedAt: stamp(1), PowerState: "power on", TargetPowerState: "power off",
		LastError: "boom", Maintenance: true, MaintenanceReason: "fan",
		Fault: "power failure", ConsoleEnabled: true, AutomatedClean: ptr(false),
		Protected: true, ProtectedReason: "prod", Retired: true, RetiredReason: "old",
		BootMode: "uefi", SecureBoot: ptr(true), DisablePowerOff: true, InstanceName: "web-01", Health: "OK",
		CleanStep: js("step"), DeployStep: js("step"), ServiceStep: js("step"),
		RaidConfig: js("logical_disks"), TargetRaidConfig: js("logical_disks"),
		NetworkData: js("links"), InspectionStartedAt: stamp(2),
		InspectionFinishedAt: stamp(3), CreatedAt: stamp(-1), UpdatedAt: stamp(0),
	}
}

// allSet fails if a field of v (a struct, nested structs but times
// included) is zero, except the named ones.
func allSet(t *testing.T, v any, except ...string) {
	t.Helper()
	skip := map[string]bool{}
	for _, e := range except {
		skip[e] = true
	}
	var walk func(prefix string, rv reflect.Value)
	walk = func(prefix string, rv reflect.Value) {
		for i := range rv.NumField() {
			f, fv := rv.Type().Field(i), rv.Field(i)
			name := prefix + f.Name
			switch {
			case skip[name]:
			case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]():
				walk(name+".", fv)
			case fv.IsZero():
				t.Errorf("fixture leaves %s zero: fill it so the round trip covers it", name)
			}
		}
	}
	walk("", reflect.ValueOf(v).Elem())
}
