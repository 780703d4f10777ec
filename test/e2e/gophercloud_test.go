package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/conductors"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/drivers"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// gcVersion is the microversion the gophercloud tests speak: Anvil's maximum
// (Ironic's API as of 1.89), which includes the service verb (1.87).
const gcVersion = "1.89"

// newGopherClient returns a noauth bare metal client for the server at base.
func newGopherClient(t *testing.T, base, microversion string) *gophercloud.ServiceClient {
	t.Helper()
	c, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: base + "/v1"})
	if err != nil {
		t.Fatalf("noauth client: %v", err)
	}
	c.HTTPClient = http.Client{Timeout: 30 * time.Second}
	c.Microversion = microversion
	return c
}

// testContext bounds a whole test's API traffic.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// apiFault extracts the HTTP status and Ironic faultstring from a
// gophercloud error (ErrUnexpectedResponseCode carrying Ironic's body).
func apiFault(t *testing.T, err error) (int, string) {
	t.Helper()
	if err == nil {
		t.Fatalf("request succeeded, want an Ironic error")
	}
	ue, ok := errorsAs[gophercloud.ErrUnexpectedResponseCode](err)
	if !ok {
		t.Fatalf("error is not an unexpected response code: %T %v", err, err)
	}
	return ue.Actual, faultString(t, ue.Body)
}

// wantFault asserts err is an Ironic error with the given status and text.
func wantFault(t *testing.T, what string, err error, status int, msg string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want HTTP %d %q", what, status, msg)
		return
	}
	gotStatus, gotMsg := apiFault(t, err)
	if gotStatus != status || gotMsg != msg {
		t.Errorf("%s:\n got HTTP %d %q\nwant HTTP %d %q", what, gotStatus, gotMsg, status, msg)
	}
}

// provision sends a provision verb that must be accepted (202).
func provision(ctx context.Context, t *testing.T, c *gophercloud.ServiceClient, id string, opts nodes.ProvisionStateOpts) {
	t.Helper()
	if err := nodes.ChangeProvisionState(ctx, c, id, opts).ExtractErr(); err != nil {
		t.Fatalf("provision %s on %s: %v", opts.Target, id, err)
	}
}

func target(tp nodes.TargetProvisionState) nodes.ProvisionStateOpts {
	return nodes.ProvisionStateOpts{Target: tp}
}

// createNode creates a fake-hardware node and returns it.
func createNode(ctx context.Context, t *testing.T, c *gophercloud.ServiceClient, opts nodes.CreateOpts) *nodes.Node {
	t.Helper()
	if opts.Driver == "" {
		opts.Driver = "fake-hardware"
	}
	n, err := nodes.Create(ctx, c, opts).Extract()
	if err != nil {
		t.Fatalf("create node %q: %v", opts.Name, err)
	}
	return n
}

// TestGophercloudLifecycle drives a node through its whole life with
// gophercloud v2, the client Metal3 and Terraform use.
func TestGophercloudLifecycle(t *testing.T) {
	t.Parallel()
	base := startServer(t)
	ctx := testContext(t)
	c := newGopherClient(t, base, gcVersion)

	// Conductors and drivers.
	allConductors, err := conductors.List(c, conductors.ListOpts{Detail: true}).AllPages(ctx)
	if err != nil {
		t.Fatalf("conductors.List: %v", err)
	}
	cs, err := conductors.ExtractConductors(allConductors)
	if err != nil || len(cs) != 1 || cs[0].Hostname != conductorHost || !cs[0].Alive {
		t.Fatalf("conductors.List = %+v, %v; want one alive %s", cs, err, conductorHost)
	}
	cond, err := conductors.Get(ctx, c, conductorHost).Extract()
	if err != nil {
		t.Fatalf("conductors.Get: %v", err)
	}
	if !cond.Alive || cond.ConductorGroup != "" || !slices.Contains(cond.Drivers, "fake-hardware") {
		t.Errorf("conductors.Get = %+v, want alive, group \"\", drivers with fake-hardware", cond)
	}
	_, err = conductors.Get(ctx, c, "no-such-conductor").Extract()
	wantFault(t, "conductors.Get unknown", err, 404, "Conductor no-such-conductor could not be found.")

	allDrivers, err := drivers.ListDrivers(c, drivers.ListDriversOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatalf("drivers.ListDrivers: %v", err)
	}
	ds, err := drivers.ExtractDrivers(allDrivers)
	if err != nil {
		t.Fatalf("drivers.ExtractDrivers: %v", err)
	}
	idx := slices.IndexFunc(ds, func(d drivers.Driver) bool { return d.Name == "fake-hardware" })
	if idx < 0 {
		t.Fatalf("drivers.ListDrivers = %+v, want fake-hardware", ds)
	}
	if ds[idx].Type != "dynamic" || !slices.Contains(ds[idx].Hosts, conductorHost) {
		t.Errorf("fake-hardware in list = %+v, want type dynamic on host %s", ds[idx], conductorHost)
	}
	drv, err := drivers.GetDriverDetails(ctx, c, "fake-hardware").Extract()
	if err != nil {
		t.Fatalf("drivers.GetDriverDetails: %v", err)
	}
	if drv.DefaultPowerInterface != "fake" || drv.DefaultDeployInterface != "fake" ||
		drv.DefaultNetworkInterface != "noop" || !slices.Contains(drv.EnabledPowerInterfaces, "fake") {
		t.Errorf("drivers.GetDriverDetails = %+v, want fake power/deploy defaults, noop network", drv)
	}
	if _, err := drivers.GetDriverProperties(ctx, c, "fake-hardware").Extract(); err != nil {
		t.Errorf("drivers.GetDriverProperties: %v", err)
	}

	// Create, get, update.
	n := createNode(ctx, t, c, nodes.CreateOpts{
		Name:       "gc-node",
		DriverInfo: map[string]any{"ipmi_username": "admin", "ipmi_password": "s3cr3t-pw"},
		Properties: map[string]any{"cpus": 8, "memory_mb": 16384, "cpu_arch": "x86_64"},
	})
	if n.ProvisionState != string(nodes.Enroll) || n.Name != "gc-node" || n.Driver != "fake-hardware" || len(n.UUID) != 36 {
		t.Errorf("nodes.Create = %s %q %q %q, want enroll gc-node fake-hardware", n.UUID, n.ProvisionState, n.Name, n.Driver)
	}
	if n.DriverInfo["ipmi_password"] != "******" {
		t.Errorf("nodes.Create driver_info = %v, want ipmi_password masked", n.DriverInfo)
	}
	id := n.UUID
	byName, err := nodes.Get(ctx, c, "gc-node").Extract()
	if err != nil || byName.UUID != id || byName.Properties["cpus"] != float64(8) {
		t.Errorf("nodes.Get by name = %+v, %v", byName, err)
	}
	upd, err := nodes.Update(ctx, c, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/rack", Value: "r42"},
		nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/properties/cpus", Value: 16},
		nodes.UpdateOperation{Op: nodes.RemoveOp, Path: "/properties/cpu_arch"},
	}).Extract()
	if err != nil {
		t.Fatalf("nodes.Update: %v", err)
	}
	if upd.Extra["rack"] != "r42" || upd.Properties["cpus"] != float64(16) || upd.Properties["cpu_arch"] != nil {
		t.Errorf("nodes.Update: extra %v properties %v", upd.Extra, upd.Properties)
	}

	// Manage, ports, validate, provide.
	provision(ctx, t, c, id, target(nodes.TargetManage))
	waitState(t, base, id, "manageable")

	pxe := true
	p, err := ports.Create(ctx, c, ports.CreateOpts{NodeUUID: id, Address: "52:54:00:AA:BB:01", PXEEnabled: &pxe}).Extract()
	if err != nil {
		t.Fatalf("ports.Create: %v", err)
	}
	if p.Address != "52:54:00:aa:bb:01" || p.NodeUUID != id || !p.PXEEnabled {
		t.Errorf("ports.Create = %+v, want lower-cased address on node %s with pxe", p, id)
	}
	_, err = ports.Create(ctx, c, ports.CreateOpts{NodeUUID: id, Address: "52:54:00:aa:bb:01"}).Extract()
	wantFault(t, "duplicate MAC", err, 409, "A port with MAC address 52:54:00:aa:bb:01 already exists.")
	_, err = ports.Create(ctx, c, ports.CreateOpts{NodeUUID: id, Address: "not-a-mac"}).Extract()
	wantFault(t, "bad MAC", err, 400, "Expected valid MAC address for address: not-a-mac")
	portPages, err := ports.List(c, ports.ListOpts{Node: "gc-node"}).AllPages(ctx)
	if err != nil {
		t.Fatalf("ports.List: %v", err)
	}
	pl, err := ports.ExtractPorts(portPages)
	if err != nil || len(pl) != 1 || pl[0].UUID != p.UUID || pl[0].Address != p.Address {
		t.Errorf("ports.List(node=gc-node) = %+v, %v; want the one port", pl, err)
	}
	detailPages, err := ports.ListDetail(c, ports.ListOpts{Address: p.Address}).AllPages(ctx)
	if err != nil {
		t.Fatalf("ports.ListDetail: %v", err)
	}
	if pd, err := ports.ExtractPorts(detailPages); err != nil || len(pd) != 1 || pd[0].NodeUUID != id {
		t.Errorf("ports.ListDetail(address) = %+v, %v", pd, err)
	}
	if got, err := ports.Get(ctx, c, p.UUID).Extract(); err != nil || got.NodeUUID != id || !got.PXEEnabled {
		t.Errorf("ports.Get = %+v, %v", got, err)
	}
	pu, err := ports.Update(ctx, c, p.UUID, ports.UpdateOpts{
		ports.UpdateOperation{Op: ports.AddOp, Path: "/extra/switch", Value: "sw-1"},
		ports.UpdateOperation{Op: ports.ReplaceOp, Path: "/pxe_enabled", Value: false},
	}).Extract()
	if err != nil || pu.Extra["switch"] != "sw-1" || pu.PXEEnabled {
		t.Errorf("ports.Update = %+v, %v", pu, err)
	}

	v, err := nodes.Validate(ctx, c, id).Extract()
	if err != nil {
		t.Fatalf("nodes.Validate: %v", err)
	}
	if !v.Power.Result || !v.Management.Result || !v.Deploy.Result || !v.Boot.Result {
		t.Errorf("nodes.Validate = %+v, want power, management, deploy, boot true", v)
	}

	provision(ctx, t, c, id, target(nodes.TargetProvide))
	waitState(t, base, id, "available")

	// Boot device and power.
	if err := nodes.SetBootDevice(ctx, c, id, nodes.BootDeviceOpts{BootDevice: "pxe"}).ExtractErr(); err != nil {
		t.Fatalf("nodes.SetBootDevice: %v", err)
	}
	bd, err := nodes.GetBootDevice(ctx, c, id).Extract()
	if err != nil || bd.BootDevice != "pxe" || bd.Persistent {
		t.Errorf("nodes.GetBootDevice = %+v, %v; want pxe, not persistent", bd, err)
	}
	if sup, err := nodes.GetSupportedBootDevices(ctx, c, id).Extract(); err != nil || !slices.Contains(sup, "pxe") {
		t.Errorf("nodes.GetSupportedBootDevices = %v, %v", sup, err)
	}
	for _, step := range []struct {
		target nodes.TargetPowerState
		want   string
	}{{nodes.PowerOn, "power on"}, {nodes.PowerOff, "power off"}, {nodes.Rebooting, "power on"}, {nodes.SoftPowerOff, "power off"}, {nodes.PowerOn, "power on"}} {
		if err := nodes.ChangePowerState(ctx, c, id, nodes.PowerStateOpts{Target: step.target}).ExtractErr(); err != nil {
			t.Fatalf("nodes.ChangePowerState %s: %v", step.target, err)
		}
		waitPower(t, base, id, step.want)
	}
	err = nodes.ChangePowerState(ctx, c, id, nodes.PowerStateOpts{Target: "bogus"}).ExtractErr()
	wantFault(t, "power target bogus", err, 400, invalidState("bogus", id, "power on"))

	// Maintenance.
	if err := nodes.SetMaintenance(ctx, c, id, nodes.MaintenanceOpts{Reason: "gc maintenance"}).ExtractErr(); err != nil {
		t.Fatalf("nodes.SetMaintenance: %v", err)
	}
	got, err := nodes.Get(ctx, c, id).Extract()
	if err != nil || !got.Maintenance || got.MaintenanceReason != "gc maintenance" {
		t.Errorf("after SetMaintenance: %+v, %v", got, err)
	}
	inMaint := listNodes(ctx, t, c, nodes.ListOpts{Maintenance: true})
	if len(inMaint) != 1 || inMaint[0].UUID != id {
		t.Errorf("nodes.List(maintenance=true) = %v", inMaint)
	}
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetActive)).ExtractErr()
	wantFault(t, "deploy in maintenance", err, 400,
		fmt.Sprintf("The provisioning operation can't be performed on node %s because it's in maintenance mode.", id))
	if err := nodes.UnsetMaintenance(ctx, c, id).ExtractErr(); err != nil {
		t.Fatalf("nodes.UnsetMaintenance: %v", err)
	}
	got, err = nodes.Get(ctx, c, id).Extract()
	if err != nil || got.Maintenance || got.MaintenanceReason != "" {
		t.Errorf("after UnsetMaintenance: maintenance %v reason %q, %v", got.Maintenance, got.MaintenanceReason, err)
	}

	// Deploy and everything an active node allows.
	provision(ctx, t, c, id, target(nodes.TargetActive))
	waitState(t, base, id, "active")
	if active := listNodes(ctx, t, c, nodes.ListOpts{ProvisionState: nodes.Active, Driver: "fake-hardware"}); len(active) != 1 || active[0].UUID != id {
		t.Errorf("nodes.List(provision_state=active) = %v", active)
	}
	if avail := listNodes(ctx, t, c, nodes.ListOpts{ProvisionState: nodes.Available}); len(avail) != 0 {
		t.Errorf("nodes.List(provision_state=available) = %v, want none", avail)
	}
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetActive)).ExtractErr()
	wantFault(t, "deploy when active", err, 400, invalidState("active", id, "active"))
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetManage)).ExtractErr()
	wantFault(t, "manage when active", err, 400, invalidState("manage", id, "active"))
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetRescue)).ExtractErr()
	wantFault(t, "rescue without password", err, 400,
		`A non-empty "rescue_password" is required when setting target provision state to rescue`)
	err = nodes.Delete(ctx, c, id).ExtractErr()
	wantFault(t, "delete active node", err, 409, cannotDeleteActive(id))

	provision(ctx, t, c, id, nodes.ProvisionStateOpts{Target: nodes.TargetRescue, RescuePassword: "gc-rescue-pw"})
	waitState(t, base, id, "rescue")
	got, err = nodes.Get(ctx, c, id).Extract()
	if err != nil || got.InstanceInfo["rescue_password"] != "******" {
		t.Errorf("node in rescue: instance_info %v, %v; want rescue_password masked", got.InstanceInfo, err)
	}
	provision(ctx, t, c, id, target(nodes.TargetUnrescue))
	waitState(t, base, id, "active")
	provision(ctx, t, c, id, target(nodes.TargetRebuild))
	waitState(t, base, id, "active")
	provision(ctx, t, c, id, target(nodes.TargetDeleted))
	after := waitState(t, base, id, "available")
	if ii, _ := after["instance_info"].(map[string]any); len(ii) != 0 || after["instance_uuid"] != nil {
		t.Errorf("after undeploy: instance_info %v instance_uuid %v, want both cleared", after["instance_info"], after["instance_uuid"])
	}

	// Port and node deletion.
	if err := ports.Delete(ctx, c, p.UUID).ExtractErr(); err != nil {
		t.Fatalf("ports.Delete: %v", err)
	}
	_, err = ports.Get(ctx, c, p.UUID).Extract()
	wantFault(t, "get deleted port", err, 404, fmt.Sprintf("Port %s could not be found.", p.UUID))
	if err := nodes.Delete(ctx, c, id).ExtractErr(); err != nil {
		t.Fatalf("nodes.Delete: %v", err)
	}
	_, err = nodes.Get(ctx, c, id).Extract()
	wantFault(t, "get deleted node", err, 404, fmt.Sprintf("Node %s could not be found.", id))
}

// listNodes returns every node matching opts, following pagination.
func listNodes(ctx context.Context, t *testing.T, c *gophercloud.ServiceClient, opts nodes.ListOpts) []nodes.Node {
	t.Helper()
	all, err := nodes.List(c, opts).AllPages(ctx)
	if err != nil {
		t.Fatalf("nodes.List(%+v): %v", opts, err)
	}
	ns, err := nodes.ExtractNodes(all)
	if err != nil {
		t.Fatalf("nodes.ExtractNodes: %v", err)
	}
	return ns
}

// TestGophercloudPagination lists 25 nodes ten at a time: gophercloud must
// follow Ironic's "next" links through three pages and see each node once.
func TestGophercloudPagination(t *testing.T) {
	t.Parallel()
	base := startServer(t)
	ctx := testContext(t)
	c := newGopherClient(t, base, gcVersion)

	var want []string
	for i := range 25 {
		n := createNode(ctx, t, c, nodes.CreateOpts{Name: fmt.Sprintf("page-node-%02d", i)})
		want = append(want, n.UUID)
	}

	var pageSizes []int
	var seen []string
	err := nodes.List(c, nodes.ListOpts{Limit: 10}).EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		ns, err := nodes.ExtractNodes(page)
		if err != nil {
			return false, err
		}
		pageSizes = append(pageSizes, len(ns))
		for _, n := range ns {
			seen = append(seen, n.UUID)
		}
		return len(pageSizes) < 10, nil // bounded even if "next" never ends
	})
	if err != nil {
		t.Fatalf("nodes.List EachPage: %v", err)
	}
	if !slices.Equal(pageSizes, []int{10, 10, 5}) {
		t.Errorf("page sizes = %v, want [10 10 5]", pageSizes)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("paged nodes (default sort by id) = %v\nwant creation order %v", seen, want)
	}

	all, err := nodes.List(c, nodes.ListOpts{Limit: 10, Fields: []string{"uuid", "name"}}).AllPages(ctx)
	if err != nil {
		t.Fatalf("nodes.List AllPages: %v", err)
	}
	ns, err := nodes.ExtractNodes(all)
	if err != nil || len(ns) != 25 {
		t.Fatalf("AllPages with fields: %d nodes, %v; want 25", len(ns), err)
	}
	for i, n := range ns {
		if n.UUID != want[i] || n.Name != fmt.Sprintf("page-node-%02d", i) || n.ProvisionState != "" {
			t.Errorf("AllPages[%d] = uuid %s name %q provision_state %q; want only uuid and name", i, n.UUID, n.Name, n.ProvisionState)
		}
	}

	detail, err := nodes.ListDetail(c, nodes.ListOpts{Limit: 10, SortDir: "desc"}).AllPages(ctx)
	if err != nil {
		t.Fatalf("nodes.ListDetail AllPages: %v", err)
	}
	dn, err := nodes.ExtractNodes(detail)
	if err != nil || len(dn) != 25 {
		t.Fatalf("ListDetail: %d nodes, %v; want 25", len(dn), err)
	}
	for i, n := range dn {
		if n.UUID != want[24-i] || n.Driver != "fake-hardware" {
			t.Errorf("ListDetail desc [%d] = %s %q, want %s fake-hardware", i, n.UUID, n.Driver, want[24-i])
		}
	}

	// A full page links to the next one; limit=0 is refused.
	r := api(t, base, gcVersion, http.MethodGet, "/v1/nodes?limit=25", nil)
	var body struct {
		Nodes []json.RawMessage `json:"nodes"`
		Next  string            `json:"next"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Nodes) != 25 || body.Next == "" {
		t.Errorf("GET /v1/nodes?limit=25: %d nodes, next %q, %v; want 25 and a next link", len(body.Nodes), body.Next, err)
	}
	if r := api(t, base, gcVersion, http.MethodGet, "/v1/nodes?limit=0", nil); r.Status != 400 || faultString(t, r.Body) != "Limit must be positive" {
		t.Errorf("GET /v1/nodes?limit=0 = HTTP %d %s, want 400 Limit must be positive", r.Status, r.Body)
	}
}

// TestGophercloudErrors checks the status and Ironic's exact faultstring of
// the errors clients branch on.
func TestGophercloudErrors(t *testing.T) {
	t.Parallel()
	base := startServer(t)
	ctx := testContext(t)
	c := newGopherClient(t, base, gcVersion)

	n := createNode(ctx, t, c, nodes.CreateOpts{Name: "err-node"})
	id := n.UUID

	_, err := nodes.Get(ctx, c, "does-not-exist").Extract()
	wantFault(t, "get unknown node", err, 404, "Node does-not-exist could not be found.")
	// Neither a UUID nor a valid name: Ironic 21.4 refuses it while
	// routing, so the message comes in its webob error document.
	if r := api(t, base, gcVersion, http.MethodGet, "/v1/nodes/bad%20name!", nil); r.Status != 400 {
		t.Errorf("GET /v1/nodes/bad%%20name! = HTTP %d %s, want 400", r.Status, r.Body)
	} else if msg, key := errorDoc(t, r.Body); msg != "Expected UUID or name for node: bad name!" || key != "description" {
		t.Errorf("GET /v1/nodes/bad%%20name!: %s %q, want Ironic's description \"Expected UUID or name for node: bad name!\"", key, msg)
	}

	// Invalid transitions from enroll.
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetProvide)).ExtractErr()
	wantFault(t, "provide from enroll", err, 400, invalidState("provide", id, "enroll"))
	err = nodes.ChangeProvisionState(ctx, c, "err-node", target(nodes.TargetActive)).ExtractErr()
	wantFault(t, "deploy from enroll", err, 400, invalidState("active", id, "enroll"))
	err = nodes.ChangeProvisionState(ctx, c, id, target("bogus")).ExtractErr()
	wantFault(t, "unknown target", err, 400, invalidState("bogus", id, "enroll"))

	// Verbs below their microversion: 406.
	old := newGopherClient(t, base, "1.3")
	res := nodes.ChangeProvisionState(ctx, old, id, target(nodes.TargetManage))
	wantFault(t, "manage at 1.3", res.ExtractErr(), 406, "Request not acceptable.")
	if ue, ok := errorsAs[gophercloud.ErrUnexpectedResponseCode](res.Err); ok {
		if got := ue.ResponseHeader.Get("X-OpenStack-Ironic-API-Version"); got != "1.3" {
			t.Errorf("406 answer's X-OpenStack-Ironic-API-Version = %q, want 1.3", got)
		}
	}
	err = nodes.ChangeProvisionState(ctx, newGopherClient(t, base, "1.37"), id, target(nodes.TargetRescue)).ExtractErr()
	wantFault(t, "rescue at 1.37", err, 406, "Request not acceptable.")
	_, err = nodes.Create(ctx, newGopherClient(t, base, "1.1"), nodes.CreateOpts{Driver: "fake-hardware", Name: "named-at-1-1"}).Extract()
	if status, _ := apiFault(t, err); status != 406 {
		t.Errorf("create with name at 1.1 = HTTP %d, want 406", status)
	}
	if st := getNode(t, base, id)["provision_state"]; st != "enroll" {
		t.Errorf("refused requests changed the node: provision_state %v", st)
	}

	// Creation errors.
	_, err = nodes.Create(ctx, c, nodes.CreateOpts{Driver: "fake-hardware", Name: "err-node"}).Extract()
	wantFault(t, "duplicate name", err, 409, "A node with name err-node already exists.")
	_, err = nodes.Create(ctx, c, nodes.CreateOpts{Driver: "no-such-driver"}).Extract()
	wantFault(t, "unknown driver", err, 400,
		`No valid host was found. Reason: No conductor service registered which supports driver no-such-driver for conductor group "".`)
	_, err = nodes.Create(ctx, c, nodes.CreateOpts{Driver: "fake-hardware", Name: "bad name!"}).Extract()
	wantFault(t, "bad name", err, 400, "Cannot create node with invalid name 'bad name!'")
	_, err = nodes.List(c, nodes.ListOpts{ProvisionState: "bogus"}).AllPages(ctx)
	wantFault(t, "list provision_state=bogus", err, 400, `Provision state "bogus" is not valid`)

	// Manageable: clean needs steps; available: inspect is refused.
	provision(ctx, t, c, id, target(nodes.TargetManage))
	waitState(t, base, id, "manageable")
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetClean)).ExtractErr()
	wantFault(t, "clean without steps", err, 400, `"clean_steps" is required when setting target provision state to clean`)
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetAbort)).ExtractErr()
	wantFault(t, "abort from manageable", err, 400, invalidState("abort", id, "manageable"))
	provision(ctx, t, c, id, target(nodes.TargetProvide))
	waitState(t, base, id, "available")
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetInspect)).ExtractErr()
	wantFault(t, "inspect from available", err, 400, invalidState("inspect", id, "available"))
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetProvide)).ExtractErr()
	wantFault(t, "provide from available", err, 400, invalidState("provide", id, "available"))

	// Active: deleting is a conflict; the port MAC stays unique.
	pxe := true
	if _, err := ports.Create(ctx, c, ports.CreateOpts{NodeUUID: id, Address: "00:11:22:33:44:55", PXEEnabled: &pxe}).Extract(); err != nil {
		t.Fatalf("ports.Create: %v", err)
	}
	provision(ctx, t, c, id, target(nodes.TargetActive))
	waitState(t, base, id, "active")
	err = nodes.Delete(ctx, c, id).ExtractErr()
	wantFault(t, "delete active", err, 409, cannotDeleteActive(id))
	_, err = ports.Create(ctx, c, ports.CreateOpts{NodeUUID: id, Address: "00:11:22:33:44:55"}).Extract()
	wantFault(t, "duplicate MAC", err, 409, "A port with MAC address 00:11:22:33:44:55 already exists.")
	if st := getNode(t, base, id)["provision_state"]; st != "active" {
		t.Errorf("refused delete changed the node: provision_state %v", st)
	}

	// "... or set the node into maintenance mode": then deleting works.
	if err := nodes.SetMaintenance(ctx, c, id, nodes.MaintenanceOpts{Reason: "decommission"}).ExtractErr(); err != nil {
		t.Fatalf("nodes.SetMaintenance: %v", err)
	}
	if err := nodes.Delete(ctx, c, id).ExtractErr(); err != nil {
		t.Errorf("delete an active node in maintenance: %v, want 204", err)
	}
	_, err = nodes.Get(ctx, c, id).Extract()
	wantFault(t, "get deleted node", err, 404, fmt.Sprintf("Node %s could not be found.", id))
}

// TestGophercloudLocked sends writes while the conductor is working on a
// node: Ironic answers 409 NodeLocked (naming the conductor), or 409 "can
// not be updated" for a PATCH during a transition that forbids updates.
func TestGophercloudLocked(t *testing.T) {
	t.Parallel()
	base := startServer(t)
	ctx := testContext(t)
	c := newGopherClient(t, base, gcVersion)
	const delay = 3 * time.Second

	n := createNode(ctx, t, c, nodes.CreateOpts{
		Name:       "slow-node",
		DriverInfo: map[string]any{"fake_verify_delay": "3", "fake_deploy_delay": "3"},
	})
	id := n.UUID

	// verifying: updates are allowed in this state, so the lock decides.
	started := time.Now()
	provision(ctx, t, c, id, target(nodes.TargetManage))
	busy := getNode(t, base, id)
	if busy["provision_state"] != "verifying" || busy["target_provision_state"] != "manageable" || busy["reservation"] != conductorHost {
		t.Fatalf("right after manage: provision_state %v target %v reservation %v; want verifying/manageable held by %s",
			busy["provision_state"], busy["target_provision_state"], busy["reservation"], conductorHost)
	}
	_, err := nodes.Update(ctx, c, id, nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/x", Value: "y"}}).Extract()
	wantFault(t, "PATCH while verifying", err, 409, nodeLocked(id))
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetManage)).ExtractErr()
	wantFault(t, "manage while verifying", err, 409, nodeLocked(id))
	err = nodes.ChangePowerState(ctx, c, id, nodes.PowerStateOpts{Target: nodes.PowerOn}).ExtractErr()
	wantFault(t, "power on while verifying", err, 409, nodeLocked(id))
	err = nodes.Delete(ctx, c, id).ExtractErr()
	wantFault(t, "delete while verifying", err, 409, nodeLocked(id))
	if elapsed := time.Since(started); elapsed >= delay {
		t.Fatalf("the locked requests took %s, longer than the %s verification: results are meaningless", elapsed, delay)
	}
	settled := waitState(t, base, id, "manageable")
	if ex, _ := settled["extra"].(map[string]any); len(ex) != 0 {
		t.Errorf("a refused PATCH changed extra: %v", settled["extra"])
	}

	provision(ctx, t, c, id, target(nodes.TargetProvide))
	waitState(t, base, id, "available")

	// deploying: a PATCH is refused by state; verbs are refused by the lock.
	started = time.Now()
	provision(ctx, t, c, id, target(nodes.TargetActive))
	_, err = nodes.Update(ctx, c, "slow-node", nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/x", Value: "y"}}).Extract()
	wantFault(t, "PATCH while deploying", err, 409, "Node slow-node can not be updated while a state transition is in progress.")
	err = nodes.ChangeProvisionState(ctx, c, id, target(nodes.TargetDeleted)).ExtractErr()
	wantFault(t, "undeploy while deploying", err, 409, nodeLocked(id))
	err = nodes.SetBootDevice(ctx, c, id, nodes.BootDeviceOpts{BootDevice: "pxe"}).ExtractErr()
	wantFault(t, "set boot device while deploying", err, 409, nodeLocked(id))
	if elapsed := time.Since(started); elapsed >= delay {
		t.Fatalf("the locked requests took %s, longer than the %s deployment: results are meaningless", elapsed, delay)
	}
	waitState(t, base, id, "active")
}
