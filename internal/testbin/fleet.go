package testbin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fleet helpers drive every node behind one API as `anvil node
// manage|provide|deploy --all --concurrency C --wait` does: a verb sent to
// each node, C requests at a time, retried while the API answers 503 (no
// free conductor worker) or 409 (node locked), then the fleet listed until
// every node is settled. Used by the emulated fleets of internal/demo (one
// process) and test/scale (API and conductor processes on PostgreSQL).

// fleetClient keeps a connection per request in flight (the default
// client keeps two idle connections per host, so 150 clients would open
// and close connections all the time).
var fleetClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{
	Proxy:               nil, // loopback only
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	MaxIdleConnsPerHost: 512,
}}

// FleetNodes lists every node behind api (all pages) with the fields the
// fleet helpers read: uuid, name, provision_state, target_provision_state,
// provision_updated_at, reservation, maintenance, last_error.
func FleetNodes(tb testing.TB, api string) []map[string]any {
	tb.Helper()
	var all []map[string]any
	marker := ""
	for {
		u := api + "/v1/nodes?fields=uuid,name,provision_state,target_provision_state,provision_updated_at,reservation,maintenance,last_error&limit=1000"
		if marker != "" {
			u += "&marker=" + marker
		}
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		resp, err := fleetClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct {
			Nodes []map[string]any `json:"nodes"`
			Next  string           `json:"next"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			tb.Fatalf("node list: %v: %s", err, b)
		}
		all = append(all, page.Nodes...)
		if page.Next == "" || len(page.Nodes) == 0 {
			return all
		}
		marker = page.Nodes[len(page.Nodes)-1]["uuid"].(string)
	}
}

// ProvisionFleet sends verb to every node behind api, conc at a time, each
// with Provision; it returns when each node's request was accepted (or the
// first error).
func ProvisionFleet(tb testing.TB, api, verb string, conc int, deadline time.Time) (map[string]time.Time, error) {
	nodes := FleetNodes(tb, api)
	accepted := make(map[string]time.Time, len(nodes))
	var mu sync.Mutex
	var firstErr error
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range min(conc, len(nodes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				err := Provision(api, id, verb, deadline)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				accepted[id] = time.Now()
				mu.Unlock()
			}
		}()
	}
	for _, nd := range nodes {
		jobs <- nd["uuid"].(string)
	}
	close(jobs)
	wg.Wait()
	return accepted, firstErr
}

// Provision PUTs one provision verb, retried every 500 ms while the answer
// is 503 or 409 or the request failed in the client, until deadline.
func Provision(api, id, verb string, deadline time.Time) error {
	body := []byte(fmt.Sprintf(`{"target": %q}`, verb))
	for {
		req, _ := http.NewRequest(http.MethodPut, api+"/v1/nodes/"+id+"/states/provision", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		resp, err := fleetClient.Do(req)
		if err != nil {
			// Seen at 10,000 nodes: a PUT retried after a 503 fails in
			// the client with "context canceled" though nothing was
			// cancelled and the API never logged it; it is retried as a
			// connection error (the CLI reports such a node as failed:
			// its request was not accepted).
			if time.Now().After(deadline) {
				return fmt.Errorf("%s %s: %w", verb, id, err)
			}
			time.Sleep(500 * time.Millisecond) // retry pause, bounded by deadline
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusAccepted:
			return nil
		case resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusConflict:
			return fmt.Errorf("%s %s: HTTP %d: %s", verb, id, resp.StatusCode, b)
		case time.Now().After(deadline):
			return fmt.Errorf("%s %s: still HTTP %d at the bound: %s", verb, id, resp.StatusCode, b)
		}
		time.Sleep(500 * time.Millisecond) // retry pause, bounded by deadline
	}
}

// WaitFleet lists the nodes every second until every one is in state with
// no target, and returns when each was first seen there; a node in a
// failed state, or the deadline, is an error.
func WaitFleet(tb testing.TB, api, state string, deadline time.Time) (map[string]time.Time, error) {
	done := map[string]time.Time{}
	for {
		var pending []string
		now := time.Now()
		for _, nd := range FleetNodes(tb, api) {
			id, _ := nd["uuid"].(string)
			ps, _ := nd["provision_state"].(string)
			switch {
			case ps == state && nd["target_provision_state"] == nil:
				if _, ok := done[id]; !ok {
					done[id] = now
				}
			case strings.HasSuffix(ps, "failed"):
				return nil, fmt.Errorf("node %v (%s): %s: %v", nd["name"], id, ps, nd["last_error"])
			default:
				pending = append(pending, fmt.Sprintf("%v (%v, %v): %s target %v, reservation %v, last_error %v",
					nd["name"], id, nd["provision_updated_at"], ps, nd["target_provision_state"], nd["reservation"], nd["last_error"]))
			}
		}
		if len(pending) == 0 {
			return done, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d nodes not %s by the bound: %s", len(pending), state, strings.Join(pending[:min(5, len(pending))], "; "))
		}
		time.Sleep(time.Second) // polling with a deadline
	}
}

// Percentile is the p-th percentile of d (sorted in place; d not empty).
func Percentile(d []time.Duration, p int) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := (len(d)*p + 99) / 100
	if i > 0 {
		i--
	}
	return d[i]
}
