package scale

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// Deploy throughput with 1 and with 3 processes (API + conductor each) on
// one PostgreSQL database, each with the same small worker pool and a
// fake_deploy_delay, so that workers, not this machine's cores, are the
// limit, as with real BMCs. Verbs go round-robin to the processes; a full
// pool answers 503 and the client retries, as Ironic clients do.
//
//	go test ./test/scale -run '^$' -bench Scaling -benchtime 1x
const (
	scalingNodes   = 120
	scalingWorkers = 10
	scalingDelay   = "1" // seconds per fake deploy
)

func BenchmarkScalingDeploy(b *testing.B) {
	for _, k := range []int{1, 3} {
		b.Run(fmt.Sprintf("conductors=%d", k), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bases := startFleet(b, k)
				ids := availableNodes(b, bases)
				b.StartTimer()
				start := time.Now()
				deployAll(b, bases, ids)
				b.ReportMetric(float64(len(ids))/time.Since(start).Seconds(), "nodes/s")
			}
		})
	}
}

func startFleet(b *testing.B, k int) []string {
	db := pg.URL(b)
	var bases []string
	for i := 0; i < k; i++ {
		base, _ := testbin.ServeOn(b, anvilBin, db, fmt.Sprintf("bench-%d", i), "--automated-clean=false",
			"--workers", fmt.Sprint(scalingWorkers), "--sync-power-state-interval", "0", "--lock-retries", "0")
		bases = append(bases, base)
	}
	return bases
}

// availableNodes creates the nodes and brings them to available.
func availableNodes(b *testing.B, bases []string) []string {
	ids := make([]string, scalingNodes)
	for i := range ids {
		n := testbin.MustCall(b, http.StatusCreated, http.MethodPost, bases[0]+"/v1/nodes", map[string]any{
			"driver": "fake-hardware", "driver_info": map[string]any{"fake_deploy_delay": scalingDelay}}).JSON(b)
		ids[i] = n["uuid"].(string)
	}
	for _, verb := range []struct{ target, state string }{{"manage", "manageable"}, {"provide", "available"}} {
		sendAll(b, bases, ids, verb.target)
		waitAll(b, bases[0], verb.state)
	}
	return ids
}

func deployAll(b *testing.B, bases []string, ids []string) {
	sendAll(b, bases, ids, "active")
	waitAll(b, bases[0], "active")
}

// sendAll sends target to every node, node i to process i mod k, retrying
// while the process answers 503 (no free worker).
func sendAll(b *testing.B, bases []string, ids []string, target string) {
	var wg sync.WaitGroup
	senders := len(bases) * scalingWorkers
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < len(ids); i += senders {
				url := bases[i%len(bases)] + "/v1/nodes/" + ids[i] + "/states/provision"
				for {
					r := testbin.Call(b, "latest", http.MethodPut, url, map[string]any{"target": target})
					if r.Status == http.StatusAccepted {
						break
					}
					if r.Status != http.StatusServiceUnavailable && r.Status != http.StatusConflict {
						b.Errorf("%s: HTTP %d %s", target, r.Status, r.Body)
						return
					}
					time.Sleep(50 * time.Millisecond) // client back-off before a retry
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// waitAll polls the node list until every node is in state and unlocked.
func waitAll(b *testing.B, base, state string) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		r := testbin.MustCall(b, http.StatusOK, http.MethodGet,
			base+"/v1/nodes?fields=uuid,provision_state,reservation&limit=1000", nil)
		var list struct {
			Nodes []struct {
				ProvisionState string  `json:"provision_state"`
				Reservation    *string `json:"reservation"`
			}
		}
		if err := json.Unmarshal(r.Body, &list); err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, n := range list.Nodes {
			if n.ProvisionState == state && n.Reservation == nil {
				done++
			}
		}
		if done == scalingNodes {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d nodes %s", done, scalingNodes, state)
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
}
