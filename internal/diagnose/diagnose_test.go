package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

var t0 = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)

const node = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"

// TestClassify: each class from Anvil's wording and from Ironic's (the
// texts of Ironic 21.4, IPA's errors.py, ipmitool and sushy), with the
// evidence that must be quoted.
func TestClassify(t *testing.T) {
	netCtx := Context{NetworkBoot: true, BootRecorded: true, KernelURL: "http://10.0.0.1:8080/ipa.kernel", RamdiskURL: "http://10.0.0.1:8080/ipa.initramfs"}
	deployTimeout := "Timeout reached while waiting for callback for node " + node
	cases := []struct {
		name     string
		d        model.Diagnosis
		ctx      Context
		class    string
		evidence string // a line of the evidence contains this
	}{
		{"ipmi auth from the driver's call", model.Diagnosis{LastError: "Failed to get power state for node " + node + ". Error: IPMI BMC 127.0.0.1:623 refused the credentials of user \"admin\" during power status (RAKP authentication failed)",
			BMCCalls: []model.BMCCall{{Protocol: "ipmi", Op: "power status", BMC: "127.0.0.1:623", Attempts: 1, Error: "IPMI BMC 127.0.0.1:623 refused the credentials", Kind: "auth"}}},
			Context{}, BMCAuth, "ipmi power status on 127.0.0.1:623 failed after 1 attempt"},
		{"ironic ipmitool auth text", model.Diagnosis{LastError: "Failed to get power state for node " + node + ". Error: IPMI call failed: power status.. Stderr: RAKP 2 HMAC is invalid\nError: Unable to establish IPMI v2 / RMCP+ session"},
			Context{}, BMCAuth, "rakp 2 hmac is invalid"},
		{"sushy 401", model.Diagnosis{LastError: "Redfish exception occurred. Error: HTTP GET https://10.0.0.5/redfish/v1/Systems/1 returned code 401. Base.1.0.GeneralError: Invalid credentials"},
			Context{}, BMCAuth, "returned code 401"},
		{"ipmi unreachable from the driver's call", model.Diagnosis{LastError: "Failed to get power state for node " + node + ". Error: IPMI power status on BMC 127.0.0.1:9 failed: opening a session: i/o timeout (gave up after 3 attempts in 2s)",
			BMCCalls: []model.BMCCall{{Protocol: "ipmi", Op: "power status", BMC: "127.0.0.1:9", Attempts: 3, Error: "opening a session: i/o timeout", Kind: "unreachable"}}},
			Context{}, BMCUnreachable, "127.0.0.1:9 failed after 3 attempt"},
		{"ironic ipmitool unreachable", model.Diagnosis{LastError: "Failed to get power state for node " + node + ". Error: IPMI call failed: power status.. Stderr: Error: Unable to establish IPMI v2 / RMCP+ session"},
			Context{}, BMCUnreachable, "unable to establish ipmi"},
		{"sushy connection error", model.Diagnosis{LastError: "Redfish exception occurred. Error: Unable to connect to https://10.0.0.5/redfish/v1. Error: Connection refused"},
			Context{}, BMCUnreachable, "unable to connect to"},
		{"ironic redfish connection error", model.Diagnosis{LastError: "Failed to get power state for node " + node + ". Error: Redfish connection failed for node " + node + ": HTTPSConnectionPool(host='10.0.0.5', port=443): Max retries exceeded with url: /redfish/v1/Systems/1"},
			Context{}, BMCUnreachable, "redfish connection failed"},
		{"recovered BMC is not blamed", model.Diagnosis{LastError: "Image failed to verify against checksum.",
			BMCCalls: []model.BMCCall{{Kind: "unreachable", Error: "x"}, {Op: "power on"}}},
			Context{}, ImageChecksum, "image failed to verify"},
		{"anvil checksum", model.Diagnosis{LastError: "Deploy step deploy.write_image failed on node " + node + ": image checksum mismatch: expected sha256 00, got 1f"},
			Context{}, ImageChecksum, "checksum mismatch"},
		{"ipa checksum", model.Diagnosis{LastError: "Agent returned error for deploy step {'step': 'write_image', 'priority': 80, 'argsinfo': None, 'interface': 'deploy'} on node " + node + " : Error performing deploy_step write_image: Error verifying image checksum: Image failed to verify against checksum. location: http://img/x.qcow2; image ID: x; image checksum: 00; verification checksum: 1f."},
			Context{}, ImageChecksum, "Error verifying image checksum"},
		{"ironic kernel 404", model.Diagnosis{LastError: "Failed to prepare to deploy: Failed to download image http://10.0.0.1:8080/ipa.kernel, reason: Got HTTP code 404 instead of 200 in response to HEAD request."},
			netCtx, BootFileMissing, "names http://10.0.0.1:8080/ipa.kernel"},
		{"anvil kernel 404", model.Diagnosis{LastError: "publishing the deploy ramdisk: fetch http://10.0.0.1:8080/ipa.kernel: HTTP 404 Not Found"},
			netCtx, BootFileMissing, "ipa.kernel"},
		{"ipa image download", model.Diagnosis{LastError: "Error performing deploy_step write_image: Error downloading image: Download of image http://img/x.qcow2 failed: URL: http://img/x.qcow2; Error: 404"},
			Context{}, ImageDownload, "error downloading image"},
		{"ipa write error", model.Diagnosis{LastError: "Error performing deploy_step write_image: Error writing image to device: Writing image to device /dev/sda failed with exit code 1. stdout: . stderr: qemu-img: error while writing at byte 0: Input/output error"},
			Context{}, DiskWrite, "error writing image to device"},
		{"anvil write error", model.Diagnosis{LastError: "Node x failed step {'interface': 'deploy', 'step': 'deploy', 'args': {}, 'priority': 100}: agent command failed: standby.prepare_image failed: write_image: writing the disk: write /dev/sda: input/output error"},
			Context{}, DiskWrite, "writing the disk"},
		{"ironic bootloader", model.Diagnosis{LastError: "Failed to install a bootloader when deploying node " + node + ". Error: Installing GRUB2 boot loader to device /dev/sda failed"},
			Context{}, Bootloader, "install a bootloader"},
		{"anvil bootloader", model.Diagnosis{LastError: "Agent returned error for deploy step image.install_bootloader on node " + node + ": install_bootloader: installing GRUB 2 into a partition image is not implemented"},
			Context{}, Bootloader, "install_bootloader"},
		{"no DHCP", model.Diagnosis{LastError: deployTimeout, Ports: []string{"52:54:00:aa:bb:01"}},
			netCtx, NoDHCP, "saw nothing from the node's MACs 52:54:00:aa:bb:01"},
		{"DHCP requests not answered", model.Diagnosis{LastError: deployTimeout, Boot: []model.BootEvent{
			{Time: t0, Service: "proxydhcp", MAC: "52:54:00:aa:bb:01", Status: "no answer", Note: "DISCOVER not answered (no iPXE binary for the client's architecture)"}}},
			netCtx, NoDHCP, "proxyDHCP got a request from 52:54:00:aa:bb:01 and gave no answer"},
		{"no DHCP needs a record", model.Diagnosis{LastError: deployTimeout},
			Context{NetworkBoot: true}, CallbackTimeout, "Timeout reached"},
		{"script but no kernel", model.Diagnosis{LastError: deployTimeout, Boot: []model.BootEvent{
			{Time: t0, Service: "proxydhcp", Status: "offer", File: "undionly.kpxe"},
			{Time: t0, Service: "http", File: "/mac/52:54:00:aa:bb:01", Status: "200", Remote: "10.0.0.9:4000"}}},
			netCtx, KernelNotLoaded, "fetched the boot script /mac/52:54:00:aa:bb:01"},
		{"boot endpoint 404 for the kernel", model.Diagnosis{LastError: deployTimeout, Boot: []model.BootEvent{
			{Time: t0, Service: "http", File: "kernel", Status: "404", Note: "withdrawn"}}},
			netCtx, BootFileMissing, "answered 404 for the kernel"},
		{"agent with no matching MAC", model.Diagnosis{LastError: deployTimeout, Ports: []string{"52:54:00:aa:bb:01"},
			Lookups: []model.AgentLookup{{Time: t0, MACs: []string{"52:54:00:99:99:99"}, Error: "Node with address(es) 52:54:00:99:99:99 could not be found"}}},
			Context{}, AgentLookup, "MACs 52:54:00:99:99:99"},
		{"a failed lookup is not this node's while others wait", model.Diagnosis{LastError: deployTimeout,
			Lookups: []model.AgentLookup{{Time: t0, MACs: []string{"52:54:00:99:99:99"}}}},
			Context{OthersWaiting: 2}, CallbackTimeout, "2 other node(s) also waited"},
		{"callback timeout after the ramdisk was fetched", model.Diagnosis{LastError: "Timeout reached while cleaning the node. Please check if the ramdisk responsible for the cleaning is running on the node. Failed on step {}.",
			Boot: []model.BootEvent{{Service: "http", File: "/mac/x", Status: "200"}, {Service: "http", File: "kernel", Status: "200", Bytes: 5}, {Service: "http", File: "ramdisk", Status: "200", Bytes: 9}}},
			netCtx, CallbackTimeout, "never looked up or called back"},
		{"unknown", model.Diagnosis{LastError: "something else entirely"}, Context{}, Unknown, "something else"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			Classify(&d, tc.ctx)
			if d.Class != tc.class {
				t.Fatalf("class %q, want %q (evidence %q)", d.Class, tc.class, d.Evidence)
			}
			if d.Summary == "" || d.Hint == "" {
				t.Errorf("summary %q, hint %q: both must say something", d.Summary, d.Hint)
			}
			found := false
			for _, e := range d.Evidence {
				found = found || strings.Contains(e, tc.evidence)
			}
			if !found {
				t.Errorf("evidence %q lacks %q", d.Evidence, tc.evidence)
			}
		})
	}
}

// TestEveryClassHasARule: each class constant is reachable and worded.
func TestEveryClassHasARule(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.class] || r.summary == "" || r.hint == "" || !strings.HasSuffix(r.summary, ".") {
			t.Errorf("rule %q: duplicate or not worded", r.class)
		}
		seen[r.class] = true
	}
	for _, c := range []string{BMCAuth, BMCUnreachable, ImageChecksum, BootFileMissing, ImageDownload, DiskWrite, Bootloader, NoDHCP, KernelNotLoaded, AgentLookup, CallbackTimeout} {
		if !seen[c] {
			t.Errorf("class %q has no rule", c)
		}
	}
}
