package scale

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ring"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// One API and three conductor processes on PostgreSQL share an emulated
// fleet (ANVIL_SCALE_FLEET_MACHINES, 150), the machines' BMCs holding 2
// sessions, answering in 20 ms and failing 5% of calls with 503: every
// node is taken enroll → manageable → available → active through the
// agent path (Redfish power and boot device, agent cleaning, the image
// written by each machine's agent), every verb sent to the API process.
// Each node is moved by its owner on the hash ring of the three conductors
// only, each conductor owning about a third. One conductor is killed (-9)
// while deploys run: the survivors take its nodes over — a deploy it held
// in "deploying" is failed with the take-over in last_error (Ironic's
// behaviour: a conductor cannot resume another's running step) and is
// deployed again, one waiting for its agent carries on with the new owner
// — and every node ends active, unlocked, out of maintenance, booted from
// its image.
func TestConductorsShareEmulatedFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("an emulated fleet through the agent path (-short)")
	}
	n := emuFleetSize(150)
	const deadAfter = 10 // seconds: room for a loaded machine, where a conductor missing it is taken for dead
	f, _ := startEmuFleet(t, emuFleetConfig{Machines: n, Conductors: 3, Latency: 20 * time.Millisecond,
		Failures: 0.05, Workers: n, DeadAfter: deadAfter})
	phaseBound := 10*time.Minute + time.Duration(n)*time.Second

	for _, v := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}} {
		deadline := time.Now().Add(phaseBound)
		if _, err := testbin.ProvisionFleet(t, f.API, v.verb, 64, deadline); err != nil {
			t.Fatal(err)
		}
		if _, err := testbin.WaitFleet(t, f.API, v.state, deadline); err != nil {
			t.Fatal(err)
		}
	}

	// Each node moved by its owner on the ring of the three only, and each
	// conductor owning about a third: the ring's own share of the hash
	// space (measured over 30,000 random keys) between a sixth and a half,
	// and the nodes it moved within 4 standard deviations of that share of n.
	members := make([]ring.Member, 0, len(f.Conductors))
	for _, c := range f.Conductors {
		members = append(members, ring.Member{Host: c})
	}
	ring3 := ring.New(members, ring.DefaultPartitions, 1)
	checkMovers(t, f.movers(nil), f.IDs, func(id string) string { return ring3.Owner(id, "") })
	share := map[string]int{}
	owner := map[string]string{}
	for _, id := range f.IDs {
		owner[id] = ring3.Owner(id, "")
		share[owner[id]]++
	}
	space := ringShares(ring3, 30000)
	t.Logf("nodes moved by each conductor: %v; the ring's shares of the hash space: %v", share, space)
	for _, c := range f.Conductors {
		p := space[c]
		sd := math.Sqrt(float64(n) * p * (1 - p))
		if p < 1.0/6 || p > 0.5 || math.Abs(float64(share[c])-p*float64(n)) > 4*sd+1 {
			t.Fatalf("conductor %s moved %d of %d nodes, its ring share %.2f; each should own about a third", c, share[c], n, p)
		}
	}

	// Deploy every node (each conductor has a worker for each of its
	// nodes: every verb is accepted at once); kill -9 one conductor as soon
	// as a tenth of its nodes are deploying or waiting for their agent. (A
	// verb still in flight to it would be answered 503 and sent again to
	// the new owner, which may find the node already moved on.)
	victim := f.Conductors[0]
	deadline := time.Now().Add(phaseBound)
	if _, err := testbin.ProvisionFleet(t, f.API, "active", 64, deadline); err != nil {
		t.Fatal(err)
	}
	for {
		inFlight := 0
		for _, nd := range testbin.FleetNodes(t, f.API) {
			if ps := nd["provision_state"]; owner[nd["uuid"].(string)] == victim && (ps == "deploying" || ps == "wait call-back") {
				inFlight++
			}
		}
		if inFlight >= max(1, share[victim]/10) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the victim never ran a deploy")
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
	f.Procs[victim].Kill()
	killed := f.logMarks()
	var interrupted []string // the victim's nodes not active at the kill
	for _, nd := range testbin.FleetNodes(t, f.API) {
		if id := nd["uuid"].(string); owner[id] == victim && nd["provision_state"] != "active" {
			interrupted = append(interrupted, fmt.Sprintf("%s (%v)", id, nd["provision_state"]))
		}
	}
	if len(interrupted) == 0 {
		t.Fatal("every node of the victim was active when it was killed: the test tests no take-over")
	}
	t.Logf("killed %s with %d of its %d nodes not active", victim, len(interrupted), share[victim])

	redeployed := waitActiveAfterTakeOver(t, f, victim, deadline)
	t.Logf("%d nodes failed by the take-over and deployed again", len(redeployed))

	// After the kill: every node moved by its owner on the ring of the
	// survivors only (the same owner as before for the survivors' nodes).
	var survivors []ring.Member
	for _, c := range f.Conductors[1:] {
		survivors = append(survivors, ring.Member{Host: c})
	}
	ring2 := ring.New(survivors, ring.DefaultPartitions, 1)
	after := f.movers(killed)
	var moved []string
	for _, id := range f.IDs {
		if after[id] != nil {
			moved = append(moved, id)
		}
	}
	checkMovers(t, after, moved, func(id string) string { return ring2.Owner(id, "") })
	took := 0
	for _, id := range moved {
		if owner[id] == victim {
			took++
		}
	}
	if took == 0 {
		t.Fatalf("no node of %s was moved by a survivor after the kill", victim)
	}

	for _, nd := range testbin.FleetNodes(t, f.API) {
		if nd["provision_state"] != "active" || nd["target_provision_state"] != nil || nd["reservation"] != nil ||
			nd["maintenance"] != false || nd["last_error"] != nil {
			t.Fatalf("node %v: %v (target %v), reservation %v, maintenance %v, last_error %v", nd["uuid"], nd["provision_state"],
				nd["target_provision_state"], nd["reservation"], nd["maintenance"], nd["last_error"])
		}
	}

	// Every machine booted its image; one session per BMC at a time (two
	// where the killed conductor's was never logged out), none refused,
	// and faults were injected.
	var transient int64
	for _, m := range f.machines(t) {
		if m.Running != "image" {
			t.Fatalf("machine %s runs %q, want the deployed image", m.ID, m.Running)
		}
		if m.BMC == nil {
			t.Fatalf("machine %s: no BMC counters (--bmc-ports)", m.ID)
		}
		if m.BMC.MaxOpen > 2 || m.BMC.Refused != 0 {
			t.Fatalf("machine %s: %d sessions open at once, %d logins refused", m.ID, m.BMC.MaxOpen, m.BMC.Refused)
		}
		transient += m.BMC.Transient503
	}
	if transient == 0 {
		t.Fatal("no transient 503 was injected: the test tests nothing of the BMC limits")
	}
}

// ringShares is each host's share of keys on r, over count random keys.
func ringShares(r *ring.Ring, count int) map[string]float64 {
	rnd := rand.New(rand.NewPCG(26, 4))
	out := map[string]float64{}
	for range count {
		out[r.Owner(fmt.Sprintf("%016x%016x", rnd.Uint64(), rnd.Uint64()), "")] += 1 / float64(count)
	}
	return out
}

// checkMovers fails unless each of ids was moved by want(id) alone, and
// no node by the API process.
func checkMovers(t *testing.T, by map[string]map[string]bool, ids []string, want func(string) string) {
	t.Helper()
	for _, id := range ids {
		if got := slices.Sorted(maps.Keys(by[id])); len(got) != 1 || got[0] != want(id) {
			t.Fatalf("node %s moved by %v, want its ring owner %s alone", id, got, want(id))
		}
	}
	for id, cs := range by {
		if cs["front"] {
			t.Fatalf("the API process moved node %s itself", id)
		}
	}
}

// waitActiveAfterTakeOver waits until every node is active; a node in
// "deploy failed" must name the take-over of victim in last_error and is
// deployed again (any other failure fails the test). It returns the nodes
// deployed again.
func waitActiveAfterTakeOver(t *testing.T, f *emuFleet, victim string, deadline time.Time) []string {
	t.Helper()
	redeployed := map[string]bool{}
	for {
		pending := 0
		var shown []string // the first pending nodes, for the failure
		for _, nd := range testbin.FleetNodes(t, f.API) {
			id, ps := nd["uuid"].(string), nd["provision_state"]
			switch {
			case ps == "active" && nd["target_provision_state"] == nil:
			case ps == "deploy failed" && nd["reservation"] == nil && !redeployed[id]:
				le, _ := nd["last_error"].(string)
				if !strings.Contains(le, "conductor take over") || !strings.Contains(le, victim) {
					t.Fatalf("node %s: deploy failed, last_error %q; want the take-over of %s", id, le, victim)
				}
				if err := testbin.Provision(f.API, id, "active", deadline); err != nil {
					t.Fatal(err)
				}
				redeployed[id] = true
				pending++
			case testbin.FailureState(fmt.Sprint(ps)) && nd["reservation"] == nil:
				t.Fatalf("node %s: %v, last_error %v", id, ps, nd["last_error"])
			default:
				pending++
				if len(shown) < 5 {
					shown = append(shown, fmt.Sprintf("%s %v (target %v, reservation %v, updated %v)", id, ps,
						nd["target_provision_state"], nd["reservation"], nd["provision_updated_at"]))
				}
			}
		}
		if pending == 0 {
			return slices.Sorted(maps.Keys(redeployed))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes not active by the bound: %s", pending, strings.Join(shown, "; "))
		}
		time.Sleep(time.Second) // polling with a deadline
	}
}
