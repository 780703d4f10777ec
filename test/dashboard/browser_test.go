package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anvil-metal/anvil/internal/dashboard"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// waitTimeout bounds each wait for the page; nothing waits for it to pass.
const waitTimeout = 15 * time.Second

const secret = "s3cret-dashboard-pw"

// browser is one headless Chromium tab with the console errors it saw.
type browser struct {
	t    testing.TB
	ctx  context.Context
	mu   sync.Mutex
	errs []chromedp.ConsoleMessage
}

// startBrowser starts Chromium for the test, or skips (fails in CI) when it
// is not installed.
func startBrowser(t testing.TB) *browser {
	t.Helper()
	path := testbin.Need(t, "chromium", "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-proxy-server", true),
		// Loopback only: every other name fails to resolve.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1400, 1800),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, m)
				b.mu.Unlock()
			}
		}
	}()
	return b
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression and decodes its value into out.
func (b *browser) eval(js string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("evaluate %s: %s: %v", js, raw, err)
		}
	}
}

// until polls the expression until it is true, and returns how long that took.
func (b *browser) until(what, js string) time.Duration {
	b.t.Helper()
	start := time.Now()
	for {
		var ok bool
		b.eval("!!("+js+")", &ok)
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > waitTimeout {
			var page string
			b.eval(`document.querySelector('main').innerText.slice(0, 3000)`, &page)
			b.t.Fatalf("%s: not true after %s: %s\npage:\n%s", what, waitTimeout, js, page)
		}
		time.Sleep(20 * time.Millisecond) // a bounded polling loop
	}
}

// consoleErrors are the errors and exceptions seen, but those expected
// says are the page's business (nil: none is).
func (b *browser) consoleErrors(expected func(chromedp.ConsoleMessage) bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.errs {
		if expected == nil || !expected(m) {
			out = append(out, m.String()+" ("+m.Source+" "+m.URL+")")
		}
	}
	return out
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	if *screenshots == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// js quotes a Go string as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// apiNodes lists node UUIDs through Ironic's node list with query q.
func apiNodes(t *testing.T, base, q string) []string {
	t.Helper()
	m := testbin.MustCall(t, http.StatusOK, "GET", base+"/v1/nodes?fields=uuid&"+q, nil).JSON(t)
	var out []string
	for _, n := range m["nodes"].([]any) {
		out = append(out, n.(map[string]any)["uuid"].(string))
	}
	return out
}

// apiCounts counts the nodes per provision state through Ironic's node list.
func apiCounts(t *testing.T, base string) map[string]int {
	t.Helper()
	m := testbin.MustCall(t, http.StatusOK, "GET", base+"/v1/nodes?fields=provision_state&limit=1000", nil).JSON(t)
	out := map[string]int{}
	for _, n := range m["nodes"].([]any) {
		out[n.(map[string]any)["provision_state"].(string)]++
	}
	return out
}

// tableUUIDs is the expression listing the fleet table's rows.
const tableUUIDs = `[...document.querySelectorAll('#nodes tbody tr[data-uuid]')].map(r => r.dataset.uuid)`

// sameRows is an expression true when the table shows exactly uuids, in order.
func sameRows(uuids []string) string {
	b, _ := json.Marshal(uuids)
	return fmt.Sprintf(`JSON.stringify(%s) === %s`, tableUUIDs, js(string(b)))
}

// diagramCount is the expression of the count the diagram shows for state.
func diagramCount(state string) string {
	return fmt.Sprintf(`document.querySelector('#lifecycle .state[data-state=%s] .count').textContent`, js(state))
}

func provision(t *testing.T, base, uuid, target string) {
	t.Helper()
	testbin.MustCall(t, http.StatusAccepted, "PUT", base+"/v1/nodes/"+uuid+"/states/provision", map[string]any{"target": target})
}

func TestDashboardInBrowser(t *testing.T) {
	b := startBrowser(t)
	base, _ := testbin.Serve(t, anvilBin, "dash-test")
	var uuids []string
	for i := range 55 {
		n := testbin.MustCall(t, http.StatusCreated, "POST", base+"/v1/nodes", map[string]any{
			"name": fmt.Sprintf("dash-%02d", i), "driver": "fake-hardware",
			"driver_info": map[string]any{"ipmi_username": "admin", "ipmi_password": secret},
		}).JSON(t)
		uuids = append(uuids, n["uuid"].(string))
	}
	testbin.MustCall(t, http.StatusCreated, "POST", base+"/v1/ports", map[string]any{
		"address": "52:54:00:12:34:56", "node_uuid": uuids[7]})
	for _, i := range []int{2, 3, 4} {
		provision(t, base, uuids[i], "manage")
	}
	for _, i := range []int{2, 3, 4} {
		testbin.WaitState(t, base, uuids[i], "manageable", 0)
	}
	// One node fails its deploy, to be shown as a failure state holding a node.
	failed := uuids[54]
	testbin.MustCall(t, http.StatusOK, "PATCH", base+"/v1/nodes/"+failed, []map[string]any{
		{"op": "add", "path": "/driver_info/fake_fail", "value": "deploy"}})
	for _, step := range [][2]string{{"manage", "manageable"}, {"provide", "available"}, {"deploy", "deploy failed"}} {
		provision(t, base, failed, step[0])
		testbin.WaitState(t, base, failed, step[1], 0)
	}

	// A browser asking for / lands on the dashboard.
	b.do("open the dashboard", chromedp.Navigate(base+"/"))
	var where string
	b.eval(`location.pathname`, &where)
	if where != "/dashboard/" {
		t.Fatalf("GET / in a browser landed on %q", where)
	}
	b.until("the event stream is live", `document.body.dataset.live === 'true'`)

	t.Run("diagram counts equal the API's", func(t *testing.T) {
		want := apiCounts(t, base)
		for _, s := range []string{"enroll", "manageable", "available", "active", "deploy failed"} {
			b.until("count of "+s, diagramCount(s)+" === "+js(fmt.Sprint(want[s])))
		}
		var holding []string
		b.eval(`[...document.querySelectorAll('#lifecycle .state.holding')].map(g => g.dataset.state).sort()`, &holding)
		if !slices.Equal(holding, []string{"deploy failed", "enroll", "manageable"}) {
			t.Errorf("states marked as holding nodes: %v", holding)
		}
		b.until("the failed node in the fleet report", `[...document.querySelectorAll('#failed a')].some(a => a.textContent === 'dash-54')`)
	})

	t.Run("table pages match the API", func(t *testing.T) {
		b.until("first page", sameRows(apiNodes(t, base, "limit=50")))
		b.do("next page", chromedp.Click(chromedp.CSS("#next")))
		b.until("second page", sameRows(apiNodes(t, base, "limit=50&marker="+uuids[49])))
		b.do("first page", chromedp.Click(chromedp.CSS("#first")))
		b.until("first page again", sameRows(apiNodes(t, base, "limit=50")))
	})

	t.Run("search by MAC", func(t *testing.T) {
		b.eval(`location.hash = '#/?search=52:54:00:12:34:56'`, nil)
		b.until("the node with the port", sameRows([]string{uuids[7]}))
		b.eval(`location.hash = '#/?sort_key=name&sort_dir=desc'`, nil)
		b.until("sorted by name, descending", sameRows(apiNodes(t, base, "limit=50&sort_key=name&sort_dir=desc")))
	})

	t.Run("clicking a state filters the table", func(t *testing.T) {
		b.eval(`location.hash = '#/'`, nil)
		b.do("click manageable", chromedp.Click(chromedp.CSS(`#lifecycle .state[data-state="manageable"]`)))
		b.until("the table shows the manageable nodes", sameRows(apiNodes(t, base, "provision_state=manageable")))
		var sel string
		b.eval(`document.querySelector('#filters select[name=provision_state]').value`, &sel)
		if sel != "manageable" {
			t.Errorf("the state filter shows %q", sel)
		}
	})

	t.Run("a transition through the API appears live", func(t *testing.T) {
		b.eval(`window.__notReloaded = true`, nil)
		// The page also re-reads the counts after events; switch that off so
		// that only the stream's events can move the diagram.
		b.eval(`(o => { o.savedLoadSummary = o.loadSummary; o.loadSummary = async () => {}; })(window.anvil.overview)`, nil)
		before := apiCounts(t, base)
		provision(t, base, uuids[10], "manage")
		took := b.until("manageable count goes up", diagramCount("manageable")+" === "+js(fmt.Sprint(before["manageable"]+1)))
		b.until("enroll count goes down", diagramCount("enroll")+" === "+js(fmt.Sprint(before["enroll"]-1)))
		b.until("the filtered table gains the node", `[...document.querySelectorAll('#nodes tbody tr')].some(r => r.dataset.uuid === `+js(uuids[10])+`)`)
		t.Logf("the diagram followed the transition %s after the API accepted it", took)
		b.eval(`(o => { o.loadSummary = o.savedLoadSummary; })(window.anvil.overview)`, nil)
		testbin.WaitState(t, base, uuids[10], "manageable", 0)
		b.until("the row shows manageable", `document.querySelector('#nodes tr[data-uuid=`+js(uuids[10])+`] td[data-field=provision_state]').textContent === 'manageable'`)
		// Likewise the table's re-reads: the row must follow the events alone.
		b.eval(`(o => { o.savedLoadTable = o.loadTable; o.loadTable = async () => {}; })(window.anvil.overview)`, nil)
		testbin.MustCall(t, http.StatusAccepted, "PUT", base+"/v1/nodes/"+uuids[2]+"/states/power", map[string]any{"target": "power on"})
		b.until("the row's power state follows", `document.querySelector('#nodes tr[data-uuid=`+js(uuids[2])+`] td[data-field=power_state]').textContent === 'power on'`)
		b.eval(`(o => { o.loadTable = o.savedLoadTable; })(window.anvil.overview)`, nil)
		var same bool
		b.eval(`window.__notReloaded === true`, &same)
		if !same {
			t.Error("the page was reloaded")
		}
		b.screenshot("dashboard-overview.png")
	})

	t.Run("node page: masked secrets and allowed actions", func(t *testing.T) {
		node := uuids[3] // manageable
		b.eval(`location.hash = '#/node/`+node+`'`, nil)
		b.until("the node's fields", `document.querySelector('#fields tr[data-field=driver_info]')`)
		var info, html string
		b.eval(`document.querySelector('#fields tr[data-field=driver_info] pre').textContent`, &info)
		if !strings.Contains(info, "******") || !strings.Contains(info, "admin") {
			t.Errorf("driver_info shown as %s", info)
		}
		b.eval(`document.documentElement.outerHTML`, &html)
		if strings.Contains(html, secret) {
			t.Fatal("the page holds the BMC password")
		}
		var actions []string
		b.eval(`[...document.querySelectorAll('#actions button.provision')].map(b => b.dataset.action)`, &actions)
		if want := dashboard.ProvisionActions("manageable"); !slices.Equal(actions, want) {
			t.Errorf("provision actions %v, want %v", actions, want)
		}
		// Cancel first: nothing happens.
		b.do("ask to provide", chromedp.Click(chromedp.CSS(`#actions button[data-action="provide"]`)))
		b.until("the confirmation opens", `document.querySelector('#confirm').open`)
		b.do("cancel", chromedp.Click(chromedp.CSS(`#confirm-cancel`)))
		b.until("the confirmation closes", `!document.querySelector('#confirm').open`)
		if ps := testbin.GetNode(t, base, node)["provision_state"]; ps != "manageable" {
			t.Fatalf("after cancel the node is %v", ps)
		}
		b.do("ask to provide", chromedp.Click(chromedp.CSS(`#actions button[data-action="provide"]`)))
		b.until("the confirmation opens", `document.querySelector('#confirm').open`)
		b.do("confirm", chromedp.Click(chromedp.CSS(`#confirm-ok`)))
		testbin.WaitState(t, base, node, "available", 0)
		b.until("the page follows the node", `document.querySelector('#node-provision-state').textContent === 'available'`)
		b.until("the history shows the move", `[...document.querySelectorAll('#timeline li')].some(li => li.textContent.includes('→ available'))`)
		b.until("the actions follow the state", `[...document.querySelectorAll('#actions button.provision')].map(b => b.dataset.action).join() === `+js(strings.Join(dashboard.ProvisionActions("available"), ",")))
		b.screenshot("dashboard-node.png")
	})

	t.Run("node page: the diagnosis of a failure", func(t *testing.T) {
		var d struct{ Class, Hint string }
		if err := json.Unmarshal(testbin.MustCall(t, http.StatusOK, "GET", base+"/v1/nodes/"+failed+"/diagnosis", nil).Body, &d); err != nil || d.Class == "" {
			t.Fatalf("the failed node's diagnosis: %v %+v", err, d)
		}
		b.eval(`location.hash = '#/node/`+failed+`'`, nil)
		b.until("the diagnosis panel", `!document.querySelector('#node-diagnosis').hidden && `+
			`document.querySelector('#diagnosis-class').textContent.startsWith(`+js(d.Class+" · deploy failed")+`) && `+
			`document.querySelector('#diagnosis-hint').textContent === `+js("What to do: "+d.Hint))
		b.eval(`location.hash = '#/node/`+uuids[5]+`'`, nil)
		b.until("a node that never failed has no diagnosis panel", `document.querySelector('#node-title').textContent.includes('dash-05') && document.querySelector('#node-diagnosis').hidden`)
	})

	if errs := b.consoleErrors(nil); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
