// Package diagnose classifies a failed node: from its last_error (Anvil's
// or Ironic's wording), what the boot services saw of its MACs, its BMC
// calls and the agents' failed lookups, it names the failure's class,
// the evidence it was concluded from and what to do. It is pure: the
// conductor gathers the evidence and stores the result.
package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
)

// The classes of failure, in the order they are tried.
const (
	BMCAuth         = "bmc-credentials-refused"
	BMCUnreachable  = "bmc-unreachable"
	ImageChecksum   = "image-checksum-mismatch"
	BootFileMissing = "boot-file-missing" // the kernel or ramdisk could not be fetched
	ImageDownload   = "image-download-failed"
	DiskWrite       = "disk-write-error"
	Bootloader      = "bootloader-install-failed"
	NoDHCP          = "no-network-boot"     // no DHCP request seen
	KernelNotLoaded = "kernel-not-fetched"  // the firmware fetched the script, not the kernel
	AgentLookup     = "agent-lookup-failed" // the ramdisk's agent matched no node
	CallbackTimeout = "callback-timeout"
	Unknown         = "unclassified"
)

// Context is what the classification needs beyond the diagnosis itself.
type Context struct {
	// NetworkBoot: the node boots over the network through Anvil's boot
	// services (ipxe, pxe), whose record is BootRecorded.
	NetworkBoot, BootRecorded bool
	// KernelURL and RamdiskURL are the node's deploy (or rescue) kernel and
	// ramdisk, to recognise their download errors.
	KernelURL, RamdiskURL string
	// OthersWaiting is how many other nodes waited for an agent when this
	// one failed: a failed lookup is only this node's when none did.
	OthersWaiting int
}

// rule is one class: match returns the evidence when it applies.
type rule struct {
	class, summary, hint string
	match                func(d *model.Diagnosis, c Context) []string
}

// rules are tried in order; the first that matches names the class.
// Errors the BMC or the agent reported come before timeouts, which are
// explained by what the boot services and the agent lookups saw.
var rules = []rule{
	{BMCAuth, "The BMC refused the credentials.",
		"Check driver_info's BMC username and password (ipmi_username/ipmi_password, redfish_username/redfish_password) against the BMC's accounts, then retry.",
		bmcAuth},
	{BMCUnreachable, "The BMC did not answer.",
		"Check the BMC address and port in driver_info, that the BMC is powered and cabled, and that the conductor can reach it (firewall, VLAN); then retry.",
		bmcUnreachable},
	{ImageChecksum, "The image written did not match its checksum.",
		"Check instance_info's image_checksum (or image_os_hash_value) against the image actually served at image_source; republish the image or fix the checksum, then deploy again.",
		lastErrorHas("image failed to verify against checksum", "error verifying image checksum", "checksum mismatch", "imagechecksumerror")},
	{BootFileMissing, "The deploy kernel or ramdisk could not be fetched.",
		"Check driver_info's deploy_kernel and deploy_ramdisk URLs (the server answered 404 or refused): publish the files there or fix the URLs, then retry.",
		bootFileMissing},
	{ImageDownload, "The agent could not download the image.",
		"Check instance_info's image_source: that it exists and the machine's network can reach it (proxy, DNS, firewall); then deploy again.",
		lastErrorHas("error downloading image", "imagedownloaderror", "image download timeout", "failed to download image", "download of image")},
	{DiskWrite, "Writing to the disk failed.",
		"Check the root device (root_device hints, the disk's health in the console tail and agent logs, its size against the image); replace or clean the disk, then deploy again.",
		lastErrorHas("error writing image to device", "writing image to device", "imagewriteerror", "writing the disk", "open disk ",
			"no space left on device", "input/output error", "file too large", "disk too small", "write error")},
	{Bootloader, "Installing the boot loader failed.",
		"Check the boot mode (boot_mode, the firmware's UEFI/BIOS setting), the image's EFI partition and the agent logs; or deploy a whole-disk image whose boot loader is in the image.",
		lastErrorHas("install_bootloader", "install a bootloader", "installing grub", "grub-install", "efibootmgr", "boot loader install",
			"no efi partition could be detected")},
	{NoDHCP, "The machine never network-booted: no DHCP request from its MACs reached Anvil, or none was answered.",
		"Check that the machine boots from the network first (BIOS/UEFI boot order, PXE enabled on the NIC), that its port MACs are the NICs it boots from, and that DHCP requests reach Anvil's proxyDHCP (same L2 segment, or a relay with Anvil as helper).",
		noDHCP},
	{KernelNotLoaded, "The firmware fetched the boot script but not the kernel and ramdisk.",
		"Check that the machine can reach the boot endpoint's HTTP URL (--http-url) and watch the console tail for iPXE's error (a 404, a timeout, no space for the ramdisk).",
		kernelNotLoaded},
	{AgentLookup, "The ramdisk booted but its agent matched no node.",
		"Compare the MACs the agent tried with the node's ports: enroll the NIC the machine booted from as a port (or fix its MAC), then retry.",
		agentLookup},
	{CallbackTimeout, "The agent never called back before the timeout.",
		"Watch the console tail: the ramdisk may not boot (kernel panic, no disk or NIC driver) or the agent may not reach the API (its URL, firewall, TLS). Raise the *_callback_timeout only if the machine is just slow.",
		callbackTimeout},
}

// Classify fills d's Class, Summary, Hint and Evidence.
func Classify(d *model.Diagnosis, c Context) {
	for _, r := range rules {
		if ev := r.match(d, c); ev != nil {
			d.Class, d.Summary, d.Hint, d.Evidence = r.class, r.summary, r.hint, ev
			return
		}
	}
	d.Class, d.Summary = Unknown, "No known pattern matched the failure."
	d.Hint = "Read last_error, the node's history and the console tail below; the agent's logs, when collected, are where the agent's side is."
	d.Evidence = []string{"last_error: " + d.LastError}
}

// Summary is the class and its one line, for history and events.
func Summary(d *model.Diagnosis) string {
	return fmt.Sprintf("Diagnosis: %s: %s %s", d.Class, d.Summary, d.Hint)
}

func lower(s string) string { return strings.ToLower(s) }

// lastErrorHas matches when last_error contains one of the phrases
// (case-insensitive).
func lastErrorHas(phrases ...string) func(d *model.Diagnosis, c Context) []string {
	return func(d *model.Diagnosis, _ Context) []string {
		le := lower(d.LastError)
		for _, p := range phrases {
			if strings.Contains(le, p) {
				return []string{fmt.Sprintf("last_error says %q: %s", p, d.LastError)}
			}
		}
		return nil
	}
}

// failedCalls are the BMC calls of kind, newest last, as evidence lines.
func failedCalls(d *model.Diagnosis, kind string) []string {
	var out []string
	for _, c := range d.BMCCalls {
		if c.Kind == kind {
			line := fmt.Sprintf("%s %s on %s failed after %d attempt(s) in %d ms: %s", c.Protocol, c.Op, c.BMC, c.Attempts, c.Millis, c.Error)
			if c.Repeated > 0 {
				line += fmt.Sprintf(" (the same %d time(s) before)", c.Repeated)
			}
			out = append(out, line)
		}
	}
	return out
}

// lastCallSucceeded reports whether the newest BMC call succeeded: an old
// failure the BMC has since recovered from explains nothing.
func lastCallSucceeded(d *model.Diagnosis) bool {
	return len(d.BMCCalls) > 0 && d.BMCCalls[len(d.BMCCalls)-1].Error == ""
}

// Ironic's and Anvil's wordings of refused BMC credentials: ipmitool's
// RAKP errors, sushy's 401 (AccessError), Anvil's ipmi driver.
var authPhrases = []string{"refused the credentials", "rakp 2 hmac is invalid", "unauthorized name",
	"invalid credentials", "returned code 401", "http 401", "401 unauthorized", "accesserror", "authentication failed",
	"insufficient privilege"}

func bmcAuth(d *model.Diagnosis, _ Context) []string {
	if lastCallSucceeded(d) {
		return nil
	}
	ev := failedCalls(d, "auth")
	le := lower(d.LastError)
	for _, p := range authPhrases {
		if strings.Contains(le, p) {
			ev = append(ev, fmt.Sprintf("last_error says %q: %s", p, d.LastError))
			break
		}
	}
	return ev
}

// Ironic's and Anvil's wordings of a BMC that does not answer: ipmitool's
// session errors, sushy's ConnectionError, Go's and Python's socket errors
// next to a BMC word.
var unreachablePhrases = []string{"unable to establish ipmi", "unable to connect to", "redfish connection failed", "connection refused",
	"no route to host", "i/o timeout", "timed out", "connection timed out", "failed to connect", "network is unreachable",
	"name or service not known", "no such host"}

func bmcUnreachable(d *model.Diagnosis, _ Context) []string {
	if lastCallSucceeded(d) {
		return nil
	}
	ev := failedCalls(d, "unreachable")
	le := lower(d.LastError)
	bmcWord := strings.Contains(le, "ipmi") || strings.Contains(le, "redfish") || strings.Contains(le, "bmc") ||
		strings.Contains(le, "power state") || strings.Contains(le, "power driver")
	if bmcWord {
		for _, p := range unreachablePhrases {
			if strings.Contains(le, p) {
				ev = append(ev, fmt.Sprintf("last_error says %q: %s", p, d.LastError))
				break
			}
		}
	}
	return ev
}

// bootFileMissing: last_error names the deploy kernel or ramdisk with an
// HTTP error (Ironic: "Failed to download image <url>, reason: Got HTTP
// code 404 ..."; Anvil's boot service: "... unreachable: HTTP 404"), or
// the boot service answered 404 for them.
func bootFileMissing(d *model.Diagnosis, c Context) []string {
	le := lower(d.LastError)
	httpErr := strings.Contains(le, "404") || strings.Contains(le, "got http code") || strings.Contains(le, "http error") ||
		strings.Contains(le, "unreachable: http")
	var ev []string
	for _, u := range []string{c.KernelURL, c.RamdiskURL} {
		if u != "" && httpErr && strings.Contains(d.LastError, u) {
			ev = append(ev, fmt.Sprintf("last_error names %s with an HTTP error: %s", u, d.LastError))
		}
	}
	if len(ev) == 0 && httpErr && (strings.Contains(le, "deploy_kernel") || strings.Contains(le, "deploy_ramdisk") ||
		strings.Contains(le, "kernel") || strings.Contains(le, "ramdisk")) {
		ev = append(ev, "last_error names the kernel or ramdisk with an HTTP error: "+d.LastError)
	}
	for _, b := range d.Boot {
		if b.Service == "http" && (b.File == "kernel" || b.File == "ramdisk") && b.Status == "404" {
			ev = append(ev, fmt.Sprintf("%s: the boot endpoint answered 404 for the %s (%s)", b.Time.Format("15:04:05"), b.File, b.Note))
		}
	}
	return ev
}

// timedOut reports whether last_error is a wait state's timeout (Ironic's
// "Timeout reached while ...").
func timedOut(d *model.Diagnosis) bool {
	return strings.Contains(lower(d.LastError), "timeout reached")
}

func noDHCP(d *model.Diagnosis, c Context) []string {
	if !timedOut(d) || !c.NetworkBoot || !c.BootRecorded {
		return nil
	}
	var unanswered []string
	for _, b := range d.Boot {
		if b.Service != "proxydhcp" || (b.Status != "ignored" && b.Status != "no answer") {
			return nil // something was answered or fetched
		}
		unanswered = append(unanswered, fmt.Sprintf("%s: proxyDHCP got a request from %s and gave no answer (%s)", b.Time.Format("15:04:05"), b.MAC, b.Note))
	}
	if len(unanswered) > 0 {
		return append([]string{"last_error: " + d.LastError}, unanswered...)
	}
	return []string{
		"last_error: " + d.LastError,
		fmt.Sprintf("the boot services saw nothing from the node's MACs %s: no proxyDHCP request, no TFTP or HTTP fetch", strings.Join(d.Ports, ", ")),
	}
}

func kernelNotLoaded(d *model.Diagnosis, c Context) []string {
	if !timedOut(d) || !c.NetworkBoot || !c.BootRecorded {
		return nil
	}
	var script, kernel bool
	var ev []string
	for _, b := range d.Boot {
		switch {
		case b.Service == "http" && strings.HasPrefix(b.File, "/mac/") && b.Status == "200":
			script = true
			ev = append(ev, fmt.Sprintf("%s: %s fetched the boot script %s", b.Time.Format("15:04:05"), b.Remote, b.File))
		case b.Service == "http" && b.File == "kernel" && strings.HasPrefix(b.Status, "200"):
			kernel = true
		}
	}
	if !script || kernel {
		return nil
	}
	return append(ev, "then no kernel fetch reached the boot endpoint", "last_error: "+d.LastError)
}

func agentLookup(d *model.Diagnosis, c Context) []string {
	if !timedOut(d) || len(d.Lookups) == 0 || c.OthersWaiting > 0 {
		return nil
	}
	ev := []string{"last_error: " + d.LastError}
	for _, l := range d.Lookups {
		ev = append(ev, fmt.Sprintf("%s: an agent looked up with MACs %s: %s", l.Time.Format("15:04:05"), strings.Join(l.MACs, ", "), l.Error))
	}
	ports := "none"
	if len(d.Ports) > 0 {
		ports = strings.Join(d.Ports, ", ")
	}
	return append(ev, "the node's ports: "+ports)
}

func callbackTimeout(d *model.Diagnosis, c Context) []string {
	if !timedOut(d) {
		return nil
	}
	ev := []string{"last_error: " + d.LastError}
	if len(d.Lookups) > 0 {
		ev = append(ev, fmt.Sprintf("%d agent lookup(s) matched no node meanwhile (MACs %s), but %d other node(s) also waited for an agent: compare those MACs with the ports of each",
			len(d.Lookups), strings.Join(d.Lookups[len(d.Lookups)-1].MACs, ", "), c.OthersWaiting))
	}
	var got []string
	for _, b := range d.Boot {
		if b.Service == "http" && (b.File == "kernel" || b.File == "ramdisk") && strings.HasPrefix(b.Status, "200") && !slices.Contains(got, b.File) {
			got = append(got, b.File)
			ev = append(ev, fmt.Sprintf("%s: the machine fetched its %s (%d bytes)", b.Time.Format("15:04:05"), b.File, b.Bytes))
		}
	}
	if len(got) == 2 {
		ev = append(ev, "the ramdisk was fetched, but its agent never looked up or called back")
	}
	return ev
}
