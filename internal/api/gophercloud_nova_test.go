package api

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/portgroups"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
)

// TestGophercloudNova drives traits, portgroups, VIFs and allocations with
// gophercloud v2.16.0's baremetal client, as Nova-style users do.
func TestGophercloudNova(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	client.Microversion = "1.110"
	ctx := t.Context()
	n := nodeFixture("gc-nova")
	n.ProvisionState, n.PowerState, n.ResourceClass = "available", "power off", "baremetal"
	n.Interfaces.Network = "flat"
	e.mustNode(n)

	// Traits: gophercloud has no helper; its raw client speaks the API.
	if _, err := client.Put(ctx, client.ServiceURL("nodes", n.UUID, "traits"),
		map[string]any{"traits": []string{"CUSTOM_GOLD", "HW_CPU_X86_VMX"}}, nil,
		&gophercloud.RequestOpts{OkCodes: []int{204}}); err != nil {
		t.Fatalf("set traits: %v", err)
	}
	got, err := nodes.Get(ctx, client, n.UUID).Extract()
	if err != nil || !slices.Equal(got.Traits, []string{"CUSTOM_GOLD", "HW_CPU_X86_VMX"}) {
		t.Fatalf("node traits %v, %v", got.Traits, err)
	}

	// A portgroup with a port, and a VIF on it.
	pg, err := portgroups.Create(ctx, client, portgroups.CreateOpts{NodeUUID: n.UUID, Name: "bond0",
		Address: "52:54:00:12:34:00", Mode: "802.3ad"}).Extract()
	if err != nil || pg.Mode != "802.3ad" || !pg.StandalonePortsSupported {
		t.Fatalf("portgroup %+v, %v", pg, err)
	}
	port, err := ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: "52:54:00:12:34:01",
		PortGroupUUID: pg.UUID}).Extract()
	if err != nil || port.PortGroupUUID != pg.UUID {
		t.Fatalf("port %+v, %v", port, err)
	}
	pgs, err := portgroups.List(client, portgroups.ListOpts{Node: n.UUID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := portgroups.ExtractPortGroups(pgs); err != nil || len(list) != 1 || list[0].UUID != pg.UUID {
		t.Fatalf("portgroups of node %+v, %v", list, err)
	}
	if err := nodes.AttachVirtualInterface(ctx, client, n.UUID, nodes.VirtualInterfaceOpts{ID: "vif-1"}).ExtractErr(); err != nil {
		t.Fatalf("attach: %v", err)
	}
	vifs, err := nodes.ListVirtualInterfaces(ctx, client, n.UUID).Extract()
	if err != nil || len(vifs) != 1 || vifs[0].ID != "vif-1" {
		t.Fatalf("vifs %+v, %v", vifs, err)
	}
	if err := nodes.DetachVirtualInterface(ctx, client, n.UUID, "vif-1").ExtractErr(); err != nil {
		t.Fatalf("detach: %v", err)
	}

	// An allocation picks the node by resource class and trait.
	a, err := allocations.Create(ctx, client, allocations.CreateOpts{Name: "gc-alloc", ResourceClass: "baremetal",
		Traits: []string{"CUSTOM_GOLD"}}).Extract()
	if err != nil {
		t.Fatalf("allocate: %v", err)
	}
	e.cond.WaitIdle()
	a, err = allocations.Get(ctx, client, a.UUID).Extract()
	if err != nil || a.State != "active" || a.NodeUUID != n.UUID {
		t.Fatalf("allocation %+v, %v", a, err)
	}
	all, err := allocations.List(client, allocations.ListOpts{State: "active"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := allocations.ExtractAllocations(all); err != nil || len(list) != 1 {
		t.Fatalf("allocations %+v, %v", list, err)
	}
	if err := allocations.Delete(ctx, client, a.UUID).ExtractErr(); err != nil {
		t.Fatalf("delete allocation: %v", err)
	}
	if got, _ := nodes.Get(ctx, client, n.UUID).Extract(); got.InstanceUUID != "" {
		t.Fatalf("node still has instance %s", got.InstanceUUID)
	}
	if err := ports.Delete(ctx, client, port.UUID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := portgroups.Delete(ctx, client, pg.UUID).ExtractErr(); err != nil {
		t.Fatalf("delete portgroup: %v", err)
	}
}
