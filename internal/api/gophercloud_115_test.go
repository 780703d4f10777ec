package api

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/runbooks"

	"github.com/anvil-metal/anvil/internal/model"
)

// TestGophercloud115 drives what gophercloud v2.16.0 has of 1.111-1.115
// at 1.115: runbook description and traits (1.112, its runbooks client's
// ListTraits/SetTraits/AddTrait/DeleteTrait/DeleteTraits) and firmware
// identity (1.114, nodes.ListFirmware). The other new fields (port and
// portgroup dynamic portgroup, history project and state) it does not
// model: microversions115_test.go checks them over raw HTTP.
func TestGophercloud115(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	client.Microversion = "1.115"
	ctx := t.Context()
	rb, err := runbooks.Create(ctx, client, runbooks.CreateOpts{Name: "gc-runbook", Description: "firmware pass",
		Steps: []runbooks.Step{{Interface: "bios", Step: "apply_configuration", Order: 1,
			Args: map[string]any{"settings": []any{map[string]any{"name": "LogicalProc", "value": "Enabled"}}}}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if rb.Description == nil || *rb.Description != "firmware pass" || rb.Traits == nil || len(rb.Traits) != 0 {
		t.Fatalf("created %+v", rb)
	}
	if err := runbooks.SetTraits(ctx, client, rb.UUID, []string{"CUSTOM_B", "CUSTOM_A"}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := runbooks.AddTrait(ctx, client, rb.UUID, "CUSTOM_C").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := runbooks.DeleteTrait(ctx, client, "gc-runbook", "CUSTOM_B").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := runbooks.DeleteTrait(ctx, client, rb.UUID, "CUSTOM_NOT_THERE").ExtractErr(); err != nil {
		t.Fatalf("deleting a trait the runbook lacks: %v", err)
	}
	traits, err := runbooks.ListTraits(ctx, client, rb.UUID).Extract()
	if err != nil || !slices.Equal(traits, []string{"CUSTOM_A", "CUSTOM_C"}) {
		t.Fatalf("traits %v %v", traits, err)
	}
	got, err := runbooks.Get(ctx, client, rb.UUID).Extract()
	if err != nil || !slices.Equal(got.Traits, traits) {
		t.Fatalf("get %+v %v", got, err)
	}
	if err := runbooks.DeleteTraits(ctx, client, rb.UUID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if traits, err := runbooks.ListTraits(ctx, client, rb.UUID).Extract(); err != nil || len(traits) != 0 {
		t.Fatalf("after deleting all: %v %v", traits, err)
	}
	client.Microversion = "1.111"
	if _, err := runbooks.ListTraits(ctx, client, rb.UUID).Extract(); err == nil {
		t.Error("runbook traits served at 1.111")
	}

	n := e.mustNode(&model.Node{Name: "gcfw"})
	if err := e.st.Settings().SyncFirmwareComponents(context.Background(), n.UUID, []model.FirmwareComponent{
		{Component: "bmc", CurrentVersion: "v1.0.0", Model: "iDRAC 9"},
		{Component: "NIC:ABC12345", CurrentVersion: "22.5.0", Vendor: "Intel Corporation", SerialNumber: "ABC12345"}}); err != nil {
		t.Fatal(err)
	}
	client.Microversion = "1.115"
	fw, err := nodes.ListFirmware(ctx, client, n.UUID).Extract()
	if err != nil || len(fw) != 2 {
		t.Fatalf("firmware %+v %v", fw, err)
	}
	nic, bmc := fw[0], fw[1]
	if nic.Vendor == nil || *nic.Vendor != "Intel Corporation" || nic.SerialNumber == nil || *nic.SerialNumber != "ABC12345" ||
		nic.Model != nil || bmc.Model == nil || *bmc.Model != "iDRAC 9" || bmc.Vendor != nil {
		t.Errorf("firmware at 1.115: %+v", fw)
	}
	client.Microversion = "1.113"
	fw, err = nodes.ListFirmware(ctx, client, n.UUID).Extract()
	if err != nil || fw[0].Vendor != nil || fw[0].SerialNumber != nil {
		t.Errorf("firmware at 1.113: %+v %v", fw, err)
	}
}
