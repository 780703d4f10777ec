package scale

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/demo"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// emuFleetConfig is an emulated fleet on PostgreSQL: Anvil as one `serve
// --role all` process (Conductors 0) or as one `--role api` and Conductors
// `--role conductor` processes, and one `anvil bmc-emulator` process whose
// machines boot the deploy agent, every BMC on a port of its own holding 2
// Redfish sessions, answering in Latency and failing Failures of its calls
// with 503.
type emuFleetConfig struct {
	Machines   int
	Conductors int
	Latency    time.Duration
	Failures   float64
	Workers    int // each conductor's worker pool
	// DeadAfter is the conductors' heartbeat timeout (seconds): a
	// conductor silent this long is taken for dead.
	DeadAfter int
}

// emuFleet is a started emulated fleet, its nodes enrolled (enroll state).
type emuFleet struct {
	API        string
	APIProc    *testbin.Process
	Conductors []string                    // conductor host ids
	Procs      map[string]*testbin.Process // by host id; the API process too
	Emu        string                      // the emulator's base URL
	EmuProc    *testbin.Process
	IDs        []string // node UUIDs
}

// emuFleetSize is ANVIL_SCALE_FLEET_MACHINES or def.
func emuFleetSize(def int) int {
	if n, err := strconv.Atoi(os.Getenv("ANVIL_SCALE_FLEET_MACHINES")); err == nil && n > 0 {
		return n
	}
	return def
}

// startEmuFleet starts the processes and enrols every machine (the time
// that takes is returned).
func startEmuFleet(tb testing.TB, cfg emuFleetConfig) (*emuFleet, time.Duration) {
	tb.Helper()
	db := pg.URL(tb)
	capped := fmt.Sprint(max(1, cfg.Conductors) * cfg.Workers)
	flags := []string{"--workers", fmt.Sprint(cfg.Workers), "--max-concurrent-clean", capped, "--max-concurrent-deploy", capped,
		"--sync-power-state-interval", "0", "--check-provision-state-interval", "1",
		"--heartbeat-interval", "1", "--heartbeat-timeout", fmt.Sprint(cfg.DeadAfter),
		// the fake boot and rescue of demo.NodeBody, opted in by name as
		// `anvil demo` does (the emulator boots the agent itself)
		"--enabled-boot-interfaces", "fake,ipxe", "--enabled-rescue-interfaces", "fake,agent,no-rescue",
		// every agent and every client is on 127.0.0.1
		"--api-max-connections", "16384", "--api-max-connections-per-address", "16384"}
	f := &emuFleet{Procs: map[string]*testbin.Process{}}
	if cfg.Conductors == 0 {
		f.API, f.APIProc = testbin.ServeOn(tb, anvilBin, db, "all-in-one", append([]string{"--role", "all"}, flags...)...)
		f.Conductors = []string{"all-in-one"}
		f.Procs["all-in-one"] = f.APIProc
	} else {
		for i := range cfg.Conductors {
			name := fmt.Sprintf("cond-%d", i)
			_, p := testbin.ServeOn(tb, anvilBin, db, name, append([]string{"--role", "conductor"}, flags...)...)
			f.Conductors = append(f.Conductors, name)
			f.Procs[name] = p
		}
		f.API, f.APIProc = testbin.ServeOn(tb, anvilBin, db, "front", append([]string{"--role", "api"}, flags...)...)
		f.Procs["front"] = f.APIProc
	}
	deadline := time.Now().Add(time.Minute)
	for len(f.alive(tb)) < len(f.Conductors) {
		if time.Now().After(deadline) {
			tb.Fatalf("conductors alive: %v, want %v", f.alive(tb), f.Conductors)
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}

	// The image: 256 KiB of random bytes served on loopback.
	img := make([]byte, 256<<10)
	r := rand.New(rand.NewPCG(uint64(cfg.Machines), 26))
	for i := range img {
		img[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(img)
	imgSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "image.raw", time.Time{}, strings.NewReader(string(img)))
	}))
	tb.Cleanup(imgSrv.Close)

	dir := tb.TempDir()
	nodesFile := filepath.Join(dir, "nodes.json")
	f.EmuProc = testbin.Start(tb, "anvil bmc-emulator", anvilBin, "bmc-emulator", "-n", fmt.Sprint(cfg.Machines),
		"--listen", "127.0.0.1:0", "--bmc-ports", "--max-sessions", "2", "--latency", cfg.Latency.String(),
		"--failure-rate", fmt.Sprint(cfg.Failures), "--agent-api", f.API, "--disk-dir", filepath.Join(dir, "disks"),
		"--nodes-file", nodesFile)
	// Anvil stops before the emulator, as a fleet's BMCs outlive it: each
	// conductor logs out of every BMC's session at shutdown, and BMCs
	// already gone cost it a logout's retries each (3 s, 128 at a time).
	tb.Cleanup(func() {
		for _, p := range f.Procs {
			_ = p.Stop(tb) // ServeOn's own cleanup checks the exit
		}
	})
	emuURL := regexp.MustCompile(`Redfish at (http://127\.0\.0\.1:[0-9]+)/redfish/v1`)
	deadline = time.Now().Add(2 * time.Minute)
	for !strings.Contains(f.EmuProc.Logs.String(), "nodes file "+nodesFile) {
		if time.Now().After(deadline) {
			tb.Fatalf("the BMC emulator wrote no nodes file in 2 minutes:\n%s", f.EmuProc.Logs.String())
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
	f.Emu = emuURL.FindStringSubmatch(f.EmuProc.Logs.String())[1]
	b, err := os.ReadFile(nodesFile)
	if err != nil {
		tb.Fatal(err)
	}
	var nodes bmcemu.NodesFile
	if err := json.Unmarshal(b, &nodes); err != nil {
		tb.Fatal(err)
	}

	start := time.Now()
	f.IDs = make([]string, len(nodes.Nodes))
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < len(nodes.Nodes); i += 16 {
				n := nodes.Nodes[i]
				node := testbin.MustCall(tb, http.StatusCreated, http.MethodPost, f.API+"/v1/nodes",
					demo.NodeBody(n, imgSrv.URL+"/image.raw", hex.EncodeToString(sum[:]))).JSON(tb)
				f.IDs[i] = node["uuid"].(string)
				for _, p := range n.Ports {
					testbin.MustCall(tb, http.StatusCreated, http.MethodPost, f.API+"/v1/ports",
						map[string]any{"address": p.Address, "node_uuid": f.IDs[i], "pxe_enabled": p.PXEEnabled})
				}
			}
		})
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	return f, time.Since(start)
}

// alive lists the conductors GET /v1/conductors shows alive.
func (f *emuFleet) alive(tb testing.TB) []string {
	var list struct {
		Conductors []struct {
			Hostname string `json:"hostname"`
			Alive    bool   `json:"alive"`
		} `json:"conductors"`
	}
	r := testbin.MustCall(tb, http.StatusOK, http.MethodGet, f.API+"/v1/conductors", nil)
	if err := json.Unmarshal(r.Body, &list); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, c := range list.Conductors {
		if c.Alive {
			out = append(out, c.Hostname)
		}
	}
	return out
}

// machines returns the emulator's view of every machine.
func (f *emuFleet) machines(tb testing.TB) []machineView {
	r := testbin.MustCall(tb, http.StatusOK, http.MethodGet, f.Emu+"/emulator/machines", nil)
	var list struct {
		Machines []machineView `json:"machines"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		tb.Fatalf("GET /emulator/machines: %v", err)
	}
	return list.Machines
}

// machineView is what the test reads of GET /emulator/machines.
type machineView struct {
	ID      string               `json:"id"`
	Running string               `json:"running"`
	Calls   int64                `json:"calls"`
	BMC     *bmcemu.SessionStats `json:"bmc"`
}

// movers returns, from offset on in each process's log (0 where none is
// given), the conductors that logged a provision transition of each node.
func (f *emuFleet) movers(from map[string]int) map[string]map[string]bool {
	by := map[string]map[string]bool{}
	for _, p := range f.Procs {
		logs := p.Logs.String()
		for _, m := range transition.FindAllStringSubmatch(logs[min(from[p.Name], len(logs)):], -1) {
			if by[m[2]] == nil {
				by[m[2]] = map[string]bool{}
			}
			by[m[2]][m[1]] = true
		}
	}
	return by
}

// logMarks are the current lengths of every process's log, by name.
func (f *emuFleet) logMarks() map[string]int {
	marks := map[string]int{}
	for _, p := range f.Procs {
		marks[p.Name] = len(p.Logs.String())
	}
	return marks
}
