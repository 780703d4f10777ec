package sqlstore_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/errtext.txt with the actual output")

var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// TestErrorTexts runs the same failing calls on every JSON-row resource of
// both engines and compares the error texts, and what each failure leaves in
// the caller's struct, with testdata/errtext.txt: the messages are part of
// what callers see, and both engines must give the same ones.
func TestErrorTexts(t *testing.T) {
	golden := filepath.Join("testdata", "errtext.txt")
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC) }
	engines := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "anvil.db"), sqlstore.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"postgres", func(t *testing.T) store.Store {
			s, err := postgres.Open(t.Context(), pg.DSN(t), sqlstore.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			s := e.open(t)
			t.Cleanup(func() { _ = s.Close() })
			got := errTranscript(t, s)
			if *rewrite && e.name == "sqlite" {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("error texts differ from %s (-rewrite to accept):\n%s", golden, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff lists the lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  want %s\n  got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// Fixed UUIDs make the texts reproducible; their last two digits also make
// each resource's unique fields.
const (
	nodeU    = "00000000-0000-4000-8000-0000000000f0"
	u1       = "00000000-0000-4000-8000-000000000011"
	u2       = "00000000-0000-4000-8000-000000000022"
	u3       = "00000000-0000-4000-8000-000000000033"
	unknownU = "00000000-0000-4000-8000-0000000000ee"
)

// crud is one resource's store methods, and how to make its rows.
type crud[T any] struct {
	what   string
	create func(context.Context, *T) error
	get    func(context.Context, string) (*T, error)
	update func(context.Context, *T) error
	del    func(context.Context, string) error
	list   func(ctx context.Context, key, dir, marker string) error
	head   func(*T) (uuid *string, id, version *int64, created, updated *time.Time)
	// fresh is a valid new row on node nodeU, its unique fields from u.
	fresh func(u string) *T
	// clash are the unique fields other than uuid: each copies that
	// field of from into to.
	clash map[string]func(to, from *T)
	// orphan, if set, makes the row name an unknown node.
	orphan func(*T)
}

func tail(u string) string { return u[len(u)-2:] }

func errTranscript(t *testing.T, s store.Store) string {
	ctx := t.Context()
	if err := s.Nodes().CreateNode(ctx, &model.Node{UUID: nodeU, Name: "node", Driver: "fake-hardware"}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	transcribe(ctx, &b, crud[model.Allocation]{
		what: "allocation", create: s.Allocations().CreateAllocation, get: s.Allocations().GetAllocation, update: s.Allocations().UpdateAllocation, del: s.Allocations().DeleteAllocation,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.Allocations().ListAllocations(ctx, store.AllocationQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.Allocation) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.Allocation {
			a := &model.Allocation{UUID: u, Name: "alloc-" + tail(u), State: "allocating", ResourceClass: "rc"}
			if u == u1 {
				a.NodeUUID = nodeU
			}
			return a
		},
		clash: map[string]func(to, from *model.Allocation){
			"name":      func(to, from *model.Allocation) { to.Name = from.Name },
			"node_uuid": func(to, from *model.Allocation) { to.NodeUUID = from.NodeUUID },
		},
		orphan: func(v *model.Allocation) { v.NodeUUID = unknownU },
	})
	transcribe(ctx, &b, crud[model.Chassis]{
		what: "chassis", create: s.Chassis().CreateChassis, get: s.Chassis().GetChassis, update: s.Chassis().UpdateChassis, del: s.Chassis().DeleteChassis,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.Chassis().ListChassis(ctx, store.ChassisQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.Chassis) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.Chassis { return &model.Chassis{UUID: u, Description: "c" + tail(u)} },
	})
	transcribe(ctx, &b, crud[model.Portgroup]{
		what: "portgroup", create: s.Ports().CreatePortgroup, get: s.Ports().GetPortgroup, update: s.Ports().UpdatePortgroup, del: s.Ports().DeletePortgroup,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.Ports().ListPortgroups(ctx, store.PortgroupQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.Portgroup) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.Portgroup {
			return &model.Portgroup{UUID: u, Name: "bond" + tail(u), Address: "52:54:00:00:01:" + tail(u), NodeUUID: nodeU}
		},
		clash: map[string]func(to, from *model.Portgroup){
			"name":    func(to, from *model.Portgroup) { to.Name = from.Name },
			"address": func(to, from *model.Portgroup) { to.Address = from.Address },
		},
		orphan: func(v *model.Portgroup) { v.NodeUUID = unknownU },
	})
	transcribe(ctx, &b, crud[model.Port]{
		what: "port", create: s.Ports().CreatePort, get: s.Ports().GetPort, update: s.Ports().UpdatePort, del: s.Ports().DeletePort,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.Ports().ListPorts(ctx, store.PortQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.Port) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.Port {
			return &model.Port{UUID: u, Name: "eth" + tail(u), Address: "52:54:00:00:02:" + tail(u), NodeUUID: nodeU}
		},
		clash: map[string]func(to, from *model.Port){
			"name":    func(to, from *model.Port) { to.Name = from.Name },
			"address": func(to, from *model.Port) { to.Address = from.Address },
		},
		orphan: func(v *model.Port) { v.NodeUUID = unknownU },
	})
	transcribe(ctx, &b, crud[model.DeployTemplate]{
		what: "deploy template", create: s.DeployTemplates().CreateDeployTemplate, get: s.DeployTemplates().GetDeployTemplate, update: s.DeployTemplates().UpdateDeployTemplate,
		del: s.DeployTemplates().DeleteDeployTemplate,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.DeployTemplates().ListDeployTemplates(ctx, store.DeployTemplateQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.DeployTemplate) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.DeployTemplate {
			return &model.DeployTemplate{UUID: u, Name: "CUSTOM_T" + tail(u)}
		},
		clash: map[string]func(to, from *model.DeployTemplate){
			"name": func(to, from *model.DeployTemplate) { to.Name = from.Name },
		},
	})
	transcribe(ctx, &b, crud[model.Runbook]{
		what: "runbook", create: s.Runbooks().CreateRunbook, get: s.Runbooks().GetRunbook, update: s.Runbooks().UpdateRunbook, del: s.Runbooks().DeleteRunbook,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.Runbooks().ListRunbooks(ctx, store.RunbookQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.Runbook) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.Runbook { return &model.Runbook{UUID: u, Name: "CUSTOM_R" + tail(u)} },
		clash: map[string]func(to, from *model.Runbook){
			"name": func(to, from *model.Runbook) { to.Name = from.Name },
		},
	})
	transcribe(ctx, &b, crud[model.InspectionRule]{
		what: "inspection rule", create: s.InspectionRules().CreateInspectionRule, get: s.InspectionRules().GetInspectionRule, update: s.InspectionRules().UpdateInspectionRule,
		del: s.InspectionRules().DeleteInspectionRule,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.InspectionRules().ListInspectionRules(ctx, store.InspectionRuleQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.InspectionRule) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.InspectionRule {
			return &model.InspectionRule{UUID: u, Phase: "main", Description: "r" + tail(u)}
		},
	})
	transcribe(ctx, &b, crud[model.VolumeConnector]{
		what: "volume connector", create: s.Volumes().CreateVolumeConnector, get: s.Volumes().GetVolumeConnector,
		update: s.Volumes().UpdateVolumeConnector, del: s.Volumes().DeleteVolumeConnector,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.Volumes().ListVolumeConnectors(ctx, store.VolumeQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.VolumeConnector) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.VolumeConnector {
			return &model.VolumeConnector{UUID: u, NodeUUID: nodeU, Type: "iqn", ConnectorID: "iqn.x:" + tail(u)}
		},
		clash: map[string]func(to, from *model.VolumeConnector){
			"type": func(to, from *model.VolumeConnector) { to.Type, to.ConnectorID = from.Type, from.ConnectorID },
		},
		orphan: func(v *model.VolumeConnector) { v.NodeUUID = unknownU },
	})
	bootIndex := map[string]int64{u1: 0, u2: 1, u3: 2}
	transcribe(ctx, &b, crud[model.VolumeTarget]{
		what: "volume target", create: s.Volumes().CreateVolumeTarget, get: s.Volumes().GetVolumeTarget,
		update: s.Volumes().UpdateVolumeTarget, del: s.Volumes().DeleteVolumeTarget,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := s.Volumes().ListVolumeTargets(ctx, store.VolumeQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *model.VolumeTarget) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *model.VolumeTarget {
			return &model.VolumeTarget{UUID: u, NodeUUID: nodeU, VolumeType: "iscsi", VolumeID: "vol-" + tail(u), BootIndex: bootIndex[u]}
		},
		clash: map[string]func(to, from *model.VolumeTarget){
			"boot_index": func(to, from *model.VolumeTarget) { to.BootIndex = from.BootIndex },
		},
		orphan: func(v *model.VolumeTarget) { v.NodeUUID = unknownU },
	})
	widgets := store.RecordsOf[widget](s.Records(), "widget")
	transcribe(ctx, &b, crud[widget]{
		what: "widget record", create: widgets.Create, get: widgets.Get, update: widgets.Update, del: widgets.Delete,
		list: func(ctx context.Context, key, dir, marker string) error {
			_, err := widgets.List(ctx, store.RecordQuery{SortKey: key, SortDir: dir, Marker: marker})
			return err
		},
		head: func(v *widget) (*string, *int64, *int64, *time.Time, *time.Time) {
			return &v.UUID, &v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt
		},
		fresh: func(u string) *widget {
			return &widget{RecordHead: model.RecordHead{UUID: u, Name: "w" + tail(u)}, Size: len(u)}
		},
		clash: map[string]func(to, from *widget){
			"name": func(to, from *widget) { to.Name = from.Name },
		},
	})
	extra := func(step string, err error) { fmt.Fprintf(&b, "%s: %s\n", step, errText(err)) }
	ch := &model.Chassis{UUID: u1}
	extra("chassis: create again", s.Chassis().CreateChassis(ctx, ch))
	n := &model.Node{UUID: u2, Driver: "fake-hardware", ChassisUUID: u1}
	extra("node: create in chassis", s.Nodes().CreateNode(ctx, n))
	extra("chassis: delete with a node", s.Chassis().DeleteChassis(ctx, u1))
	_, err := s.Ports().GetPortByAddress(ctx, "52:54:00:00:02:ee")
	extra("port: get unknown address", err)
	for _, u := range []string{u2, u3} {
		extra("inspection rule: create "+tail(u), s.InspectionRules().CreateInspectionRule(ctx, &model.InspectionRule{UUID: u, Phase: "main"}))
	}
	deleted, err := s.InspectionRules().DeleteInspectionRules(ctx)
	extra(fmt.Sprintf("inspection rule: delete all (%d)", deleted), err)
	return b.String()
}

// widget is a record kind of the generic record table.
type widget struct {
	model.RecordHead
	Size int `json:"size"`
}

// transcribe writes one line per call: what it returned and, for a write,
// what it left in the caller's struct.
func transcribe[T any](ctx context.Context, b *strings.Builder, c crud[T]) {
	say := func(step string, err error, v *T) {
		fmt.Fprintf(b, "%s: %s: %s", c.what, step, errText(err))
		if v != nil {
			u, id, version, created, updated := c.head(v)
			fmt.Fprintf(b, " [uuid %s id>0 %t version %d created %s updated %s]", *u, *id > 0, *version,
				created.Format(time.RFC3339Nano), updated.Format(time.RFC3339Nano))
		}
		b.WriteString("\n")
	}
	a := c.fresh(u1)
	say("create", c.create(ctx, a), a)
	blank := c.fresh(u2)
	u, _, _, created, _ := c.head(blank)
	*u, *created = "", time.Date(2025, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 3600))
	err := c.create(ctx, blank)
	fmt.Fprintf(b, "%s: create without uuid: %s [uuid set %t created %s]\n", c.what, errText(err), *u != "", created.Format(time.RFC3339Nano))
	if err == nil {
		say("delete it", c.del(ctx, *u), nil)
	}
	again := c.fresh(u2) // nothing but the uuid clashes
	u, _, _, _, _ = c.head(again)
	*u = u1
	say("create same uuid", c.create(ctx, again), again)
	for _, col := range slices.Sorted(maps.Keys(c.clash)) {
		dup := c.fresh(u2)
		c.clash[col](dup, a)
		say("create same "+col, c.create(ctx, dup), dup)
	}
	if c.orphan != nil {
		o := c.fresh(u2)
		c.orphan(o)
		say("create on unknown node", c.create(ctx, o), o)
	}
	_, err = c.get(ctx, unknownU)
	say("get unknown uuid", err, nil)
	_, err = c.get(ctx, "no-such-name")
	say("get unknown name", err, nil)
	got, err := c.get(ctx, u1)
	say("get", err, got)
	if got == nil {
		return
	}
	stale := *got
	say("update", c.update(ctx, got), got)
	say("update stale", c.update(ctx, &stale), &stale)
	missing := c.fresh(unknownU)
	_, _, version, _, _ := c.head(missing)
	*version = 1
	say("update unknown", c.update(ctx, missing), missing)
	if len(c.clash) > 0 || c.orphan != nil {
		other := c.fresh(u3)
		say("create other", c.create(ctx, other), other)
		for _, col := range slices.Sorted(maps.Keys(c.clash)) {
			moved := *other
			c.clash[col](&moved, got)
			say("update into same "+col, c.update(ctx, &moved), &moved)
		}
		if c.orphan != nil {
			moved := *other
			c.orphan(&moved)
			say("update onto unknown node", c.update(ctx, &moved), &moved)
		}
	}
	say("list bad key", c.list(ctx, "no_such_key", "", ""), nil)
	say("list bad dir", c.list(ctx, "", "sideways", ""), nil)
	say("list unknown marker", c.list(ctx, "", "", unknownU), nil)
	say("delete unknown", c.del(ctx, unknownU), nil)
	say("delete", c.del(ctx, u1), nil)
	_, err = c.get(ctx, u1)
	say("get deleted", err, nil)
	say("delete again", c.del(ctx, u1), nil)
}

// errText is err's text and which of the store's errors it is.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	var kinds []string
	var dup *store.DuplicateError
	if errors.As(err, &dup) {
		kinds = append(kinds, fmt.Sprintf("DuplicateError{%s %q}", dup.Field, dup.Value))
	}
	for _, k := range []struct {
		name string
		err  error
	}{{"ErrNotFound", store.ErrNotFound}, {"ErrStale", store.ErrStale}, {"ErrDuplicate", store.ErrDuplicate},
		{"ErrChassisNotEmpty", store.ErrChassisNotEmpty}} {
		if errors.Is(err, k.err) {
			kinds = append(kinds, k.name)
		}
	}
	return fmt.Sprintf("%q %v", err.Error(), kinds)
}
