package api

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/runbooks"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// TestGophercloudRunbooks drives /v1/runbooks and a clean by runbook with
// gophercloud v2's runbooks client (1.92, at Metal3's newest version).
func TestGophercloudRunbooks(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	client.Microversion = "1.110"
	ctx := t.Context()
	public := true
	rb, err := runbooks.Create(ctx, client, runbooks.CreateOpts{Name: "CUSTOM_GC", Public: &public, Extra: map[string]any{"k": "v"},
		Steps: []runbooks.Step{{Interface: "bios", Step: "apply_configuration", Order: 1,
			Args: map[string]any{"settings": []any{map[string]any{"name": "LogicalProc", "value": "Enabled"}}}}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if rb.UUID == "" || !rb.Public || rb.Owner != "" || len(rb.Steps) != 1 || rb.Steps[0].Order != 1 || rb.Extra["k"] != "v" {
		t.Errorf("created %+v", rb)
	}
	for _, name := range []string{"CUSTOM_GC2", "CUSTOM_GC3"} {
		if _, err := runbooks.Create(ctx, client, runbooks.CreateOpts{Name: name,
			Steps: []runbooks.Step{{Interface: "deploy", Step: "erase_devices", Order: 1, Args: map[string]any{}}}}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	var seen, pages int
	err = runbooks.List(client, runbooks.ListOpts{Limit: 2, Detail: true}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := runbooks.ExtractRunbooks(p)
		pages++
		seen += len(list)
		return true, err
	})
	if err != nil || seen != 3 || pages != 2 {
		t.Fatalf("paged list: %v, %d runbooks in %d pages", err, seen, pages)
	}
	got, err := runbooks.Get(ctx, client, "CUSTOM_GC").Extract()
	if err != nil || got.UUID != rb.UUID {
		t.Fatalf("get by name: %v %+v", err, got)
	}
	upd, err := runbooks.Update(ctx, client, rb.UUID, runbooks.UpdateOpts{
		runbooks.UpdateOperation{Op: runbooks.ReplaceOp, Path: "/disable_ramdisk", Value: true}}).Extract()
	if err != nil || !upd.DisableRamdisk {
		t.Fatalf("update: %v %+v", err, upd)
	}
	if _, err := runbooks.Update(ctx, client, rb.UUID, runbooks.UpdateOpts{
		runbooks.UpdateOperation{Op: runbooks.ReplaceOp, Path: "/disable_ramdisk", Value: false}}).Extract(); err != nil {
		t.Fatal(err)
	}

	n := e.mustNode(&model.Node{Name: "gc-rb", ProvisionState: fsm.Manageable, Traits: []string{"CUSTOM_GC"}})
	if err := nodes.ChangeProvisionState(ctx, client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetClean,
		Runbook: "CUSTOM_GC"}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	wantBIOS(t, e, n, "Enabled")

	if err := runbooks.Delete(ctx, client, "CUSTOM_GC2").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := runbooks.Get(ctx, client, "CUSTOM_GC2").Extract(); err == nil {
		t.Error("deleted runbook still found")
	}
}
