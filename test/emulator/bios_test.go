package emulator_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBIOSAndFirmwareThroughTheBMC: `anvil serve` and two emulated
// machines enrolled with the redfish driver and its bios and firmware
// interfaces. BIOS settings applied by manual cleaning and by servicing
// reach the emulated BIOS (pending in Bios/Settings, applied by the reboot
// the step makes) and read back from GET /bios; a factory reset restores
// the defaults; a firmware update through servicing changes the emulated
// versions and GET /firmware shows them flashed. Bad settings and bad
// arguments fail with Ironic's errors and leave the BIOS untouched. A
// redfish inspection caches what the BMC reports.
func TestBIOSAndFirmwareThroughTheBMC(t *testing.T) {
	api, _ := testbin.Serve(t, anvilBin, "bios-e2e", "--enabled-boot-interfaces", "fake,ipxe,pxe",
		"--enabled-deploy-interfaces", "fake,direct")
	emu, err := bmcemu.Start(context.Background(), bmcemu.Config{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	imgs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bmc-2.5.0.bin":
			w.Write([]byte("component=bmc version=2.5.0\n\x7fELF..."))
		case "/bios.bin":
			w.Write([]byte("BIOS capsule\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(imgs.Close)

	nf, err := emu.Nodes(bmcemu.DriverRedfish)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nf.Nodes {
		call(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": n.Name, "driver": n.Driver, "driver_info": n.DriverInfo,
			"boot_interface": "fake", "deploy_interface": "fake", "bios_interface": "redfish", "firmware_interface": "redfish"})
		names = append(names, n.Name)
	}
	good, bad := names[0], names[1]
	mGood, mBad := emu.Machine(good), emu.Machine(bad)
	provision := func(node string, body map[string]any, want string) map[string]any {
		t.Helper()
		call(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", body)
		return settle(t, api, node, want)
	}
	for _, n := range names {
		provision(n, map[string]any{"target": "manage"}, "manageable")
	}
	bios := func(node, name string) map[string]any {
		t.Helper()
		return call(t, 200, "GET", api+"/v1/nodes/"+node+"/bios/"+name, nil)[name].(map[string]any)
	}

	// manual cleaning applies two settings: pending, then applied by the reboot
	provision(good, map[string]any{"target": "clean", "clean_steps": []any{map[string]any{"interface": "bios", "step": "apply_configuration",
		"args": map[string]any{"settings": []any{
			map[string]any{"name": "ProcTurboMode", "value": "Disabled"},
			map[string]any{"name": "PowerOnDelay", "value": "30"}}}}}}, "manageable")
	cur, pending := mGood.BIOS()
	if cur["ProcTurboMode"] != "Disabled" || cur["PowerOnDelay"] != 30 || len(pending) != 0 {
		t.Fatalf("emulated BIOS after cleaning: current %v, pending %v", cur, pending)
	}
	if s := bios(good, "PowerOnDelay"); s["value"] != "30" || s["attribute_type"] != "Integer" || s["upper_bound"] != 300.0 {
		t.Errorf("GET /bios/PowerOnDelay = %v", s)
	}
	if s := bios(good, "SystemServiceTag"); s["read_only"] != true || s["unique"] != true {
		t.Errorf("GET /bios/SystemServiceTag = %v", s)
	}
	if mGood.PoweredOn() {
		t.Errorf("the step left the node powered on; it was off")
	}

	// factory reset
	provision(good, map[string]any{"target": "clean", "clean_steps": []any{map[string]any{"interface": "bios", "step": "factory_reset"}}}, "manageable")
	if cur, _ := mGood.BIOS(); cur["ProcTurboMode"] != "Enabled" || cur["PowerOnDelay"] != 0 {
		t.Errorf("emulated BIOS after factory_reset: %v", cur)
	}
	if s := bios(good, "ProcTurboMode"); s["value"] != "Enabled" {
		t.Errorf("GET /bios/ProcTurboMode after factory_reset = %v", s)
	}

	// a redfish inspection caches the BIOS settings and firmware versions
	provision(bad, map[string]any{"target": "inspect"}, "manageable")
	if list := call(t, 200, "GET", api+"/v1/nodes/"+bad+"/bios", nil)["bios"].([]any); len(list) != 7 {
		t.Errorf("BIOS settings cached by inspection: %v", list)
	}
	if list := call(t, 200, "GET", api+"/v1/nodes/"+bad+"/firmware", nil)["firmware"].([]any); len(list) != 2 {
		t.Errorf("firmware cached by inspection: %v", list)
	}

	// bad input: nothing half-applied
	for _, tc := range []struct {
		name string
		step map[string]any
		want string
	}{
		{"read-only", map[string]any{"interface": "bios", "step": "apply_configuration", "args": map[string]any{"settings": []any{
			map[string]any{"name": "AssetTag", "value": "rack-7"}, map[string]any{"name": "SystemServiceTag", "value": "X"}}}},
			"Redfish BIOS apply_configuration failed for node %s: invalid value for setting(s): SystemServiceTag"},
		{"unknown setting", map[string]any{"interface": "bios", "step": "apply_configuration", "args": map[string]any{"settings": []any{
			map[string]any{"name": "AssetTag", "value": "rack-7"}, map[string]any{"name": "NoSuchThing", "value": "1"}}}},
			"Redfish BIOS apply configuration failed for node %s. Error: Redfish call PATCH"},
		{"settings missing", map[string]any{"interface": "bios", "step": "apply_configuration"},
			"Cannot clean node %s: clean step {'interface': 'bios', 'step': 'apply_configuration'} is missing these required arguments: settings (A list of BIOS settings to be applied)"},
	} {
		node := provision(bad, map[string]any{"target": "clean", "clean_steps": []any{tc.step}}, "clean failed")
		uuid := node["uuid"].(string)
		if msg, _ := node["last_error"].(string); !strings.Contains(msg, strings.ReplaceAll(tc.want, "%s", uuid)) {
			t.Errorf("%s: last_error %q\nwant it to contain %q", tc.name, msg, strings.ReplaceAll(tc.want, "%s", uuid))
		}
		if cur, pending := mBad.BIOS(); cur["AssetTag"] != "" || len(pending) != 0 {
			t.Errorf("%s: the BIOS changed: current %v pending %v", tc.name, cur, pending)
		}
		call(t, 202, "DELETE", api+"/v1/nodes/"+bad+"/maintenance", nil)
		provision(bad, map[string]any{"target": "manage"}, "manageable")
	}
	call(t, 400, "PUT", api+"/v1/nodes/"+bad+"/states/provision", map[string]any{"target": "clean",
		"clean_steps": []any{map[string]any{"interface": "bios", "step": "apply_configuration", "args": []any{}}}})

	// servicing: a BIOS setting, then firmware
	provision(good, map[string]any{"target": "provide"}, "available")
	provision(good, map[string]any{"target": "active"}, "active")
	provision(good, map[string]any{"target": "service", "service_steps": []any{map[string]any{"interface": "bios", "step": "apply_configuration",
		"args": map[string]any{"settings": []any{map[string]any{"name": "SriovGlobalEnable", "value": "Enabled"}}}}}}, "active")
	if cur, _ := mGood.BIOS(); cur["SriovGlobalEnable"] != "Enabled" {
		t.Errorf("emulated BIOS after servicing: %v", cur)
	}
	if s := bios(good, "SriovGlobalEnable"); s["value"] != "Enabled" {
		t.Errorf("GET /bios/SriovGlobalEnable after servicing = %v", s)
	}
	provision(good, map[string]any{"target": "service", "service_steps": []any{map[string]any{"interface": "firmware", "step": "update",
		"args": map[string]any{"settings": []any{
			map[string]any{"component": "bmc", "url": imgs.URL + "/bmc-2.5.0.bin"},
			map[string]any{"component": "bios", "url": imgs.URL + "/bios.bin"}}}}}}, "active")
	if fw := mGood.Firmware(); fw["bmc"] != "2.5.0" || fw["bios"] != "1.1.0" {
		t.Errorf("emulated firmware after the update: %v", fw)
	}
	if tasks := emu.UpdateTasks(good); len(tasks) != 2 || tasks[0] != bmcemu.TaskCompleted || tasks[1] != bmcemu.TaskCompleted {
		t.Errorf("update tasks: %v", tasks)
	}
	fw := map[string]map[string]any{}
	for _, c := range call(t, 200, "GET", api+"/v1/nodes/"+good+"/firmware", nil)["firmware"].([]any) {
		m := c.(map[string]any)
		fw[m["component"].(string)] = m
	}
	if b := fw["bios"]; b["initial_version"] != "1.0.0" || b["current_version"] != "1.1.0" || b["last_version_flashed"] != "1.1.0" {
		t.Errorf("GET /firmware bios = %v", b)
	}
	if b := fw["bmc"]; b["initial_version"] != "1.0.0" || b["current_version"] != "2.5.0" || b["last_version_flashed"] != "2.5.0" {
		t.Errorf("GET /firmware bmc = %v", b)
	}

	// a firmware update failing Ironic's schema: service failed, nothing flashed
	node := provision(good, map[string]any{"target": "service", "service_steps": []any{map[string]any{"interface": "firmware", "step": "update",
		"args": map[string]any{"settings": []any{map[string]any{"component": "cpld", "url": imgs.URL + "/bios.bin"}}}}}}, "service failed")
	if msg, _ := node["last_error"].(string); !strings.Contains(msg, "Invalid firmware update") || !strings.Contains(msg, "'cpld' is not valid under any of the given schemas") {
		t.Errorf("bad firmware update: last_error %q", msg)
	}
	if len(emu.UpdateTasks(good)) != 2 {
		t.Errorf("a refused update reached the BMC: %v", emu.UpdateTasks(good))
	}

	// gophercloud v2.16.0 reads the same
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: api + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	client.Microversion = "1.86"
	ctx := context.Background()
	settings, err := nodes.ListBIOSSettings(ctx, client, good, nodes.ListBIOSSettingsOpts{Detail: true}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]nodes.BIOSSetting{}
	for _, s := range settings {
		byName[s.Name] = s
	}
	if s := byName["ProcTurboMode"]; s.Value != "Enabled" || s.AttributeType != "Enumeration" || len(s.AllowableValues) != 2 {
		t.Errorf("gophercloud ProcTurboMode = %+v", s)
	}
	if s := byName["PowerOnDelay"]; s.UpperBound == nil || *s.UpperBound != 300 || s.LowerBound == nil || *s.LowerBound != 0 {
		t.Errorf("gophercloud PowerOnDelay = %+v", s)
	}
	// gophercloud's GetBIOSSetting decodes {"Setting": ...}; Ironic answers
	// {"<name>": ...}, so read the body as Ironic shapes it.
	var one map[string]nodes.BIOSSetting
	if err := nodes.GetBIOSSetting(ctx, client, good, "SriovGlobalEnable").ExtractInto(&one); err != nil || one["SriovGlobalEnable"].Value != "Enabled" {
		t.Errorf("gophercloud GetBIOSSetting = %+v, %v", one, err)
	}
	comps, err := nodes.ListFirmware(ctx, client, good).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 2 || comps[1].Component != "bmc" || comps[1].CurrentVersion != "2.5.0" || comps[1].LastVersionFlashed != "2.5.0" ||
		comps[1].UpdatedAt == nil || comps[1].CreatedAt.IsZero() {
		t.Errorf("gophercloud ListFirmware = %+v", comps)
	}
}

// settle waits until node rests in provision state want (no target, no
// lock) and returns it; any other resting state fails at once.
func settle(t *testing.T, api, node, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		n := call(t, 200, "GET", api+"/v1/nodes/"+node, nil)
		st, _ := n["provision_state"].(string)
		failed := strings.HasSuffix(st, " failed") // keeps its target (Ironic's)
		if (n["target_provision_state"] == nil || failed) && n["reservation"] == nil {
			if st == want {
				return n
			}
			if st != "manageable" && st != "available" && st != "active" && st != "enroll" || st != want && time.Now().After(deadline) {
				t.Fatalf("node %s rests in %q (last_error %v), want %q", node, st, n["last_error"], want)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: %q → %v after 60s, want %q", node, st, n["target_provision_state"], want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
