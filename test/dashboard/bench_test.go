package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// rendered resolves, in the page, when the table shows its first page and
// the diagram counts every node in enroll; its value is the time since the
// navigation started, in milliseconds.
const rendered = `new Promise(done => {
	const check = () => {
		const c = document.querySelector('#lifecycle .state[data-state=enroll] .count');
		if (document.querySelectorAll('#nodes tbody tr[data-uuid]').length === 50 && c && c.textContent === '%d') {
			done(performance.now());
		} else {
			requestAnimationFrame(check);
		}
	};
	check();
})`

// applyEvents feeds the overview 1,000 node.updated events (provision and
// power state changes of the nodes on the page) through the handler the
// stream calls, and resolves with the milliseconds that took, the paint
// that follows included.
const applyEvents = `new Promise(done => {
	const o = window.anvil.overview;
	const rows = [...document.querySelectorAll('#nodes tbody tr[data-uuid]')].map(r => r.dataset.uuid);
	const t0 = performance.now();
	for (let i = 0; i < 1000; i++) {
		const [from, to] = i %% 2 ? ['enroll', 'verifying'] : ['verifying', 'enroll'];
		o.onEvent('node.updated', {node: rows[i %% rows.length], name: 'n', changed: ['provision_state', 'power_state'],
			node_state: {provision_state: to, power_state: i %% 2 ? 'power on' : 'power off'}, previous: {provision_state: from}});
	}
	requestAnimationFrame(() => done(performance.now() - t0));
})`

// BenchmarkDashboard10k opens the dashboard over 10,000 nodes in headless
// Chromium: ms-first-render is from navigation to the table's first page
// and the diagram's counts on screen; ms-per-1000-events is the page's
// time to apply 1,000 stream events (diagram counts, table rows) and
// paint: the share of a second the page is busy at 1,000 events/s.
//
//	go test ./test/dashboard -run '^$' -bench Dashboard10k -benchtime 5x
func BenchmarkDashboard10k(b *testing.B) {
	const total = 10_000
	br := startBrowser(b)
	base, _ := testbin.Serve(b, anvilBin, "dash-bench")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += 8 {
				testbin.MustCall(b, http.StatusCreated, "POST", base+"/v1/nodes",
					map[string]any{"name": fmt.Sprintf("n%05d", i), "driver": "fake-hardware"})
			}
		}()
	}
	wg.Wait()
	var render, apply float64
	for b.Loop() {
		br.do("open the dashboard", chromedp.Navigate(base+"/dashboard/"))
		ctx, cancel := context.WithTimeout(br.ctx, time.Minute)
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(rendered, total), chromedp.EvalAwaitPromise))
		if err != nil {
			cancel()
			b.Fatalf("first render: %v", err)
		}
		render += ms
		ms, err = chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(applyEvents), chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			b.Fatalf("apply events: %v", err)
		}
		apply += ms
	}
	b.ReportMetric(render/float64(b.N), "ms-first-render")
	b.ReportMetric(apply/float64(b.N), "ms-per-1000-events")
}
