package storetest

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

func testSettings(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"BIOS settings sync", biosSync},
		{"firmware components sync", firmwareSync},
		{"go with their node", settingsGoWithNode},
	})
}

func strp(s string) *string { return &s }

func biosSync(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	lo, hi, ro := int64(0), int64(300), true
	typ := "Integer"
	first := []model.BIOSSetting{
		{Name: "ProcTurboMode", Value: strp("Enabled"), AttributeType: strp("Enumeration"), AllowableValues: []string{"Enabled", "Disabled"}},
		{Name: "PowerOnDelay", Value: strp("0"), AttributeType: &typ, LowerBound: &lo, UpperBound: &hi},
		{Name: "ServiceTag", Value: strp("ABC"), ReadOnly: &ro},
	}
	wantErr(t, "sync", s.Settings().SyncBIOSSettings(ctx, n.UUID, first), nil)
	got, err := s.Settings().ListBIOSSettings(ctx, n.UUID)
	wantErr(t, "list", err, nil)
	if len(got) != 3 || got[0].Name != "PowerOnDelay" || got[1].Name != "ProcTurboMode" || got[2].Name != "ServiceTag" {
		t.Fatalf("list = %+v, want 3 sorted by name", got)
	}
	if *got[0].UpperBound != 300 || got[1].AllowableValues[1] != "Disabled" || got[2].ReadOnly == nil || !*got[2].ReadOnly ||
		got[0].CreatedAt.IsZero() || !got[0].UpdatedAt.IsZero() {
		t.Fatalf("round trip lost fields: %+v", got)
	}
	created := got[1].CreatedAt
	// change one, drop one, keep one
	second := []model.BIOSSetting{first[0], first[1]}
	second[1].Value = strp("30")
	wantErr(t, "resync", s.Settings().SyncBIOSSettings(ctx, n.UUID, second), nil)
	one, err := s.Settings().GetBIOSSetting(ctx, n.UUID, "PowerOnDelay")
	wantErr(t, "get", err, nil)
	if *one.Value != "30" || one.UpdatedAt.IsZero() {
		t.Errorf("changed setting = %+v, want value 30 with updated_at", one)
	}
	kept, err := s.Settings().GetBIOSSetting(ctx, n.UUID, "ProcTurboMode")
	wantErr(t, "get kept", err, nil)
	if !kept.UpdatedAt.IsZero() || !kept.CreatedAt.Equal(created) {
		t.Errorf("unchanged setting = %+v, want created_at kept and no updated_at", kept)
	}
	_, err = s.Settings().GetBIOSSetting(ctx, n.UUID, "ServiceTag")
	wantErr(t, "dropped setting", err, store.ErrNotFound)
	wantErr(t, "unknown node", s.Settings().SyncBIOSSettings(ctx, "00000000-0000-4000-8000-000000000000", first), store.ErrNotFound)
}

func firmwareSync(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	comps := []model.FirmwareComponent{{Component: "bmc", CurrentVersion: "1.0.0"}, {Component: "bios", CurrentVersion: "2.1.0"}}
	wantErr(t, "sync", s.Settings().SyncFirmwareComponents(ctx, n.UUID, comps), nil)
	wantErr(t, "sync again", s.Settings().SyncFirmwareComponents(ctx, n.UUID, comps), nil)
	got, err := s.Settings().ListFirmwareComponents(ctx, n.UUID)
	wantErr(t, "list", err, nil)
	if len(got) != 2 || got[0].Component != "bios" || got[0].InitialVersion != "2.1.0" || got[0].CurrentVersion != "2.1.0" ||
		got[0].LastVersionFlashed != "" || !got[0].UpdatedAt.IsZero() {
		t.Fatalf("first sync = %+v", got)
	}
	wantErr(t, "flashed", s.Settings().SyncFirmwareComponents(ctx, n.UUID, []model.FirmwareComponent{{Component: "bios", CurrentVersion: "2.2.0"}}), nil)
	got, err = s.Settings().ListFirmwareComponents(ctx, n.UUID)
	wantErr(t, "list", err, nil)
	if len(got) != 2 || got[0].InitialVersion != "2.1.0" || got[0].CurrentVersion != "2.2.0" || got[0].LastVersionFlashed != "2.2.0" ||
		got[0].UpdatedAt.IsZero() || got[1].CurrentVersion != "1.0.0" {
		t.Fatalf("after flashing bios: %+v", got)
	}
	// The hardware identity (API 1.114) is stored and refreshed on each
	// sync (NULL to a value after an upgrade, as Ironic's sync does).
	ident := []model.FirmwareComponent{{Component: "bios", CurrentVersion: "2.2.0"},
		{Component: "bmc", CurrentVersion: "1.0.0", Vendor: "Acme", Model: "iDRAC 9", SerialNumber: "SN1"}}
	wantErr(t, "identity", s.Settings().SyncFirmwareComponents(ctx, n.UUID, ident), nil)
	got, err = s.Settings().ListFirmwareComponents(ctx, n.UUID)
	wantErr(t, "list", err, nil)
	if len(got) != 2 || got[1].Vendor != "Acme" || got[1].Model != "iDRAC 9" || got[1].SerialNumber != "SN1" ||
		got[1].UpdatedAt.IsZero() || got[1].LastVersionFlashed != "" || got[0].Model != "" || got[0].LastVersionFlashed != "2.2.0" {
		t.Fatalf("after the identity sync: %+v", got)
	}
	wantErr(t, "unknown node", s.Settings().SyncFirmwareComponents(ctx, "00000000-0000-4000-8000-000000000000", comps), store.ErrNotFound)
}

func settingsGoWithNode(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("n"))
	wantErr(t, "bios", s.Settings().SyncBIOSSettings(ctx, n.UUID, []model.BIOSSetting{{Name: "A", Value: strp("1")}}), nil)
	wantErr(t, "firmware", s.Settings().SyncFirmwareComponents(ctx, n.UUID, []model.FirmwareComponent{{Component: "bmc", CurrentVersion: "1"}}), nil)
	wantErr(t, "DeleteNode", s.Nodes().DeleteNode(ctx, n.UUID), nil)
	n2 := newNode("n")
	n2.UUID = n.UUID
	mustCreateNode(t, s, n2)
	if b, _ := s.Settings().ListBIOSSettings(ctx, n.UUID); len(b) != 0 {
		t.Errorf("BIOS settings survived their node: %+v", b)
	}
	if f, _ := s.Settings().ListFirmwareComponents(ctx, n.UUID); len(f) != 0 {
		t.Errorf("firmware components survived their node: %+v", f)
	}
}
