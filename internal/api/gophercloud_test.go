package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/conductors"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/drivers"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// TestGophercloud drives the API with gophercloud's baremetal client, as
// Metal3 does, at the oldest and the newest version Metal3 picks.
func TestGophercloud(t *testing.T) {
	for _, v := range []string{"1.89", "1.110"} {
		t.Run(v, func(t *testing.T) { gophercloudAt(t, v) })
	}
}

func gophercloudAt(t *testing.T, microversion string) {
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	client.Microversion = microversion
	ctx := t.Context()

	node, err := nodes.Create(ctx, client, nodes.CreateOpts{Driver: fakeDriver, Name: "gc-node",
		DriverInfo: map[string]any{"ipmi_password": "pw", "ipmi_address": "10.0.0.1"}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if node.ProvisionState != "enroll" || node.DriverInfo["ipmi_password"] != "******" || node.Conductor != "anvil-test" {
		t.Errorf("created %+v", node)
	}
	for i := range 4 {
		if _, err := nodes.Create(ctx, client, nodes.CreateOpts{Driver: fakeDriver, Name: fmt.Sprintf("gc-%d", i)}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	var seen, pages int
	err = nodes.ListDetail(client, nodes.ListOpts{Limit: 2}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := nodes.ExtractNodes(p)
		pages++
		seen += len(list)
		return true, err
	})
	if err != nil || seen != 5 || pages != 3 {
		t.Fatalf("paged list: %v, %d nodes in %d pages", err, seen, pages)
	}
	got, err := nodes.Get(ctx, client, "gc-node").Extract()
	if err != nil || got.UUID != node.UUID {
		t.Fatalf("get: %v %+v", err, got)
	}
	upd, err := nodes.Update(ctx, client, node.UUID, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/rack", Value: "r1"},
		nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/driver_info/ipmi_address", Value: "10.0.0.2"},
	}).Extract()
	if err != nil || upd.Extra["rack"] != "r1" || upd.DriverInfo["ipmi_address"] != "10.0.0.2" {
		t.Fatalf("update: %v %+v", err, upd)
	}
	if err := nodes.ChangeProvisionState(ctx, client, node.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetManage}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := nodes.ChangePowerState(ctx, client, node.UUID, nodes.PowerStateOpts{Target: nodes.PowerOn}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	states, err := nodes.Get(ctx, client, node.UUID).Extract()
	if err != nil || states.ProvisionState != "manageable" || states.PowerState != "power on" {
		t.Fatalf("states: %v %+v", err, states)
	}
	if _, err := nodes.Validate(ctx, client, node.UUID).Extract(); err != nil {
		t.Fatal(err)
	}
	if err := nodes.SetMaintenance(ctx, client, node.UUID, nodes.MaintenanceOpts{Reason: "test"}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := nodes.ChangeProvisionState(ctx, client, node.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr(); !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		t.Errorf("deploy from manageable: %v", err)
	}

	port, err := ports.Create(ctx, client, ports.CreateOpts{NodeUUID: node.UUID, Address: "52:54:00:AA:BB:01"}).Extract()
	if err != nil || port.Address != "52:54:00:aa:bb:01" {
		t.Fatalf("port: %v %+v", err, port)
	}
	_, err = ports.Create(ctx, client, ports.CreateOpts{NodeUUID: node.UUID, Address: "52:54:00:aa:bb:01"}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("duplicate port: %v", err)
	}
	allPorts, err := ports.ListDetail(client, ports.ListOpts{Node: "gc-node"}).AllPages(ctx)
	if list, _ := ports.ExtractPorts(allPorts); err != nil || len(list) != 1 {
		t.Fatalf("ports: %v %v", err, list)
	}
	drvPages, err := drivers.ListDrivers(client, drivers.ListDriversOpts{Detail: true}).AllPages(ctx)
	if list, _ := drivers.ExtractDrivers(drvPages); err != nil || len(list) != 1 || list[0].DefaultPowerInterface != "fake" {
		t.Fatalf("drivers: %v %+v", err, list)
	}
	condPages, err := conductors.List(client, conductors.ListOpts{Detail: true}).AllPages(ctx)
	if list, _ := conductors.ExtractConductors(condPages); err != nil || len(list) != 1 || !list[0].Alive {
		t.Fatalf("conductors: %v %+v", err, list)
	}
	if _, err := nodes.Get(ctx, client, "no-such-node").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("missing node: %v", err)
	}
	if err := nodes.Delete(ctx, client, node.UUID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
}
