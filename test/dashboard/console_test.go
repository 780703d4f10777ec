package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/coder/websocket"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// termText is what the page's terminal shows (xterm.js's rows).
const termText = `(document.querySelector('#terminal .xterm-rows') || {textContent: ''}).textContent.replace(/\u00a0/g, ' ')`

// typeKeys types s into the focused element as a keyboard does: a keyDown
// carrying the character, then a keyUp. (chromedp's KeyEvent adds a
// separate char event, which a page that handles keydown itself, as
// xterm.js does, receives as a second keystroke.)
func typeKeys(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range s {
			evs := kb.Encode(r)
			text := ""
			for _, k := range evs {
				if k.Type == kb.KeyChar {
					text = k.Text
				}
			}
			for _, k := range evs {
				if k.Type == kb.KeyChar {
					continue
				}
				p := *k
				if p.Type == kb.KeyDown {
					p.Text, p.UnmodifiedText = text, text
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, p); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// TestConsoleTabInBrowser: the node page's console tab is a terminal on
// the node's serial console (ipmi_sim's SOL to a serial peer that echoes
// what is typed). While another viewer holds the keyboard the tab is
// marked read-only and the machine's output (its boot lines, printed while
// the tab is open) appears in the terminal; once that viewer leaves, the
// tab holds the keyboard and what is typed in the page reaches the
// machine, whose echo comes back into the terminal.
func TestConsoleTabInBrowser(t *testing.T) {
	b := startBrowser(t)
	serial := ipmisim.NewSerial(t, "")
	port := ipmisim.StartSOL(t, "anvil-dash", "sol-pw-123", "tcp:"+serial.Addr)
	base, proc := testbin.Serve(t, anvilBin, "dash-console")
	id := testbin.MustCall(t, http.StatusCreated, http.MethodPost, base+"/v1/nodes", map[string]any{
		"name": "console-01", "driver": "ipmi", "console_interface": "ipmi-sol", "driver_info": map[string]any{
			"ipmi_address": "127.0.0.1", "ipmi_port": port, "ipmi_username": ipmisim.User, "ipmi_password": "sol-pw-123"}}).JSON(t)["uuid"].(string)

	b.do("open the node's console tab", chromedp.Navigate(base+"/dashboard/#/node/"+id+"/console"))
	b.until("the console tab offers to enable the console", `!document.querySelector('#console-enable').hidden && document.body.dataset.console === 'off'`)
	// Another viewer takes the keyboard first: the page's is read-only.
	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, base+"/v1/nodes/"+id+"/states/console", map[string]any{"enabled": true})
	var other *websocket.Conn
	for deadline := time.Now().Add(waitTimeout); ; {
		c, _, err := websocket.Dial(t.Context(), strings.Replace(base, "http://", "ws://", 1)+"/v1/nodes/"+id+"/console/ws", nil)
		if err == nil {
			other = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other viewer: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
	defer other.CloseNow()
	if _, p, err := other.Read(t.Context()); err != nil || !strings.Contains(string(p), `"read_only":false`) {
		t.Fatalf("the other viewer's status: %s %v", p, err)
	}
	go func() { // drain it, as a viewer does
		for {
			if _, _, err := other.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	b.until("the page is a read-only viewer", `document.body.dataset.console === 'read-only' && document.querySelector('#console-status').textContent.includes('Read-only')`)

	for i := 0; ; i++ { // the SOL may still be activating: print until seen
		serial.Write([]byte(fmt.Sprintf("SeaBIOS (version 1.16) BOOT-LINE-%d\r\n", i)))
		var seen bool
		b.eval(termText+`.includes('BOOT-LINE-')`, &seen)
		if seen {
			break
		}
		if i == 100 {
			t.Fatal("the machine's output never reached the terminal")
		}
		time.Sleep(100 * time.Millisecond) // polling with a bound
	}
	b.do("type while read-only", chromedp.Click(chromedp.CSS("#terminal")), typeKeys("nope\r"))

	// The other viewer leaves: the page holds the keyboard.
	other.Close(websocket.StatusNormalClosure, "")
	b.until("the page holds the keyboard", `document.body.dataset.console === 'read-write'`)
	b.do("type into the console", chromedp.Click(chromedp.CSS("#terminal")), typeKeys("hello-from-browser\r"))
	b.until("the machine's echo in the terminal", termText+`.includes('echo: hello-from-browser')`)
	if lines := serial.Lines(); !slices.Contains(lines, "hello-from-browser") || slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "nope") }) {
		t.Errorf("lines typed on the machine: %q", lines)
	}
	b.screenshot("dashboard-console.png")

	// Disabling the console ends the session and the page says so.
	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, base+"/v1/nodes/"+id+"/states/console", map[string]any{"enabled": false})
	b.until("the page shows the console off", `document.body.dataset.console === 'off' || document.body.dataset.console === 'ended'`)
	if errs := b.consoleErrors(nil); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	if strings.Contains(proc.Logs.String(), "sol-pw-123") {
		t.Error("the server logged the BMC password")
	}
}

// TestConsoleTabShowsVMBoot: the console tab of a redfish node (the BMC
// emulator's qemu VM, its console redfish-serial: SOL on the IPMI port the
// system's SerialConsole names) shows the VM's boot output live when the
// machine is powered on from the page.
func TestConsoleTabShowsVMBoot(t *testing.T) {
	testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86")
	b := startBrowser(t)
	emu, err := bmcemu.Start(t.Context(), bmcemu.Config{Count: 1, IPMI: true, StateDir: filepath.Join(t.TempDir(), "state"),
		QEMU: &bmcemu.QEMUConfig{MemoryMiB: 64, DiskBytes: 1 << 20, ShutdownTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	disk, err := os.OpenFile(emu.Machine("node-01").Status().Disk, os.O_WRONLY, 0) // its first sector
	if err != nil {
		t.Fatal(err)
	}
	if _, err := disk.Write(bmcemu.BootSector("VM-BOOTED-IN-THE-TAB")); err != nil {
		t.Fatal(err)
	}
	disk.Close()
	nf, err := emu.Nodes(bmcemu.DriverRedfish)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := testbin.Serve(t, anvilBin, "dash-vm")
	id := testbin.MustCall(t, http.StatusCreated, http.MethodPost, base+"/v1/nodes", map[string]any{
		"name": "vm-01", "driver": "redfish", "console_interface": "redfish-serial", "driver_info": nf.Nodes[0].DriverInfo}).JSON(t)["uuid"].(string)
	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, base+"/v1/nodes/"+id+"/states/console", map[string]any{"enabled": true})
	b.do("open the node's console tab", chromedp.Navigate(base+"/dashboard/#/node/"+id+"/console"))
	b.until("the page holds the keyboard", `document.body.dataset.console === 'read-write'`)
	b.do("ask to power on", chromedp.Click(chromedp.CSS(`#actions button[data-action="power on"]`)))
	b.until("the confirmation opens", `document.querySelector('#confirm').open`)
	b.do("confirm", chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	b.until("the VM's boot output in the terminal", termText+`.includes('VM-BOOTED-IN-THE-TAB')`)
	if errs := b.consoleErrors(nil); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
