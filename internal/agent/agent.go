package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/tlsconf"
)

// Version is reported in heartbeats.
const Version = "anvil-agent-1.0"

// Config configures an Agent.
type Config struct {
	APIURL string   // the Ironic-compatible API, e.g. http://127.0.0.1:6385
	MACs   []string // addresses to look up by (default: the machine's NICs)
	Disk   string   // block device or file the image is written to
	// Disks are --disk's specs (PATH[,attr=value...], disk.FileDisk): the
	// disks root device hints choose among; the first is Disk's default.
	Disks        []string
	Listen       string // command API address (127.0.0.1:9999)
	AdvertiseURL string // callback_url reported in heartbeats (http://<listen>)
	// HeartbeatInterval overrides the jittered 0.3–0.6 × heartbeat_timeout.
	HeartbeatInterval time.Duration
	// RootDir prefixes /proc and /sys when reading the inventory (tests).
	RootDir string
	// AllowMD5 lets prepare_image verify md5 checksums even when the
	// lookup's agent_md5_checksum_enable does not allow them.
	AllowMD5 bool
	// PowerOff powers the machine off (standby.power_off); nil: the agent
	// only flushes the disks (tests, and agents not running as init).
	PowerOff func(ctx context.Context) error
	Log      *slog.Logger
	// Client talks to the API; nil: one built from TLS.
	Client *http.Client
	// TLS is how the API's certificate is verified and which client
	// certificate is presented (IPA's cafile, certfile, keyfile and
	// ipa-insecure); the zero value trusts the system's CAs.
	TLS tlsconf.Client
	// Ready is called with the command API's address once it listens.
	Ready func(addr string)
	// AgentToken is a token handed over by the boot media (IPA's
	// ipa-agent-token): used when the lookup answers the token masked, as
	// it does for a pregenerated one. Never logged.
	AgentToken string
	// EFIVarsDir is the UEFI variable store (efivarfs) boot entries are
	// written to; set, it also makes the agent see a UEFI boot (tests).
	// Default: /sys/firmware/efi/efivars under RootDir.
	EFIVarsDir string
	// BIOS: the machine is known to boot by BIOS, whatever the host shows
	// under /sys/firmware/efi: install_bootloader never reads or writes
	// UEFI variables. The BMC emulator's agents run on the emulator's host
	// and must never write its boot entries.
	BIOS bool
}

// Agent is one running agent.
type Agent struct {
	cfg Config
	log *slog.Logger
	cmd *commands

	// wake asks the heartbeat loop to heartbeat now rather than at the next
	// interval: an asynchronous command has finished, and the conductor
	// waits for a heartbeat to see it (IPA's force_heartbeat).
	wake chan struct{}

	mu             sync.Mutex
	nodeUUID       string
	token          string // plain; never logged
	timeout        time.Duration
	md5Enabled     bool           // the lookup's agent_md5_checksum_enable
	partitionUUIDs map[string]any // standby.get_partition_uuids' answer
	imageDisk      string         // where the last image went (install_bootloader's disk)
	inspectPending bool           // the node waits for this agent's inventory
}

// New returns an agent; Run starts it.
func New(cfg Config) (*Agent, error) {
	if cfg.APIURL == "" {
		return nil, errors.New("agent: the API URL is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:9999"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
		if !cfg.TLS.IsZero() {
			tc, err := cfg.TLS.Config()
			if err != nil {
				return nil, fmt.Errorf("agent: %w", err)
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.TLSClientConfig = tc
			cfg.Client.Transport = tr
		}
	}
	if len(cfg.MACs) == 0 {
		cfg.MACs = systemMACs(cfg.RootDir)
	}
	if devs, err := fileDisks(cfg.Disks); err != nil {
		return nil, err
	} else if len(devs) > 0 && cfg.Disk == "" {
		cfg.Disk = devs[0].Name
	}
	a := &Agent{cfg: cfg, log: cfg.Log, wake: make(chan struct{}, 1)}
	a.cmd = newCommands(a)
	return a, nil
}

// systemMACs reads the NICs' addresses from /sys/class/net (loopback and
// all-zero addresses skipped).
func systemMACs(root string) []string {
	dir := filepath.Join(root, "/sys/class/net")
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "address"))
		mac := strings.TrimSpace(string(b))
		if err != nil || e.Name() == "lo" || mac == "" || mac == "00:00:00:00:00:00" {
			continue
		}
		out = append(out, mac)
	}
	return out
}

// Run serves the command API and keeps the node's conductor informed until
// ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("agent: listen on %s: %w", a.cfg.Listen, err)
	}
	if a.cfg.AdvertiseURL == "" {
		a.cfg.AdvertiseURL = "http://" + ln.Addr().String()
	}
	srv := &http.Server{Handler: a.cmd.handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if a.cfg.Ready != nil {
		a.cfg.Ready(ln.Addr().String())
	}
	a.log.Info("agent started", "listen", ln.Addr().String(), "callback_url", a.cfg.AdvertiseURL,
		"macs", strings.Join(a.cfg.MACs, ","), "disk", a.cfg.Disk)
	a.loop(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	a.cmd.wait()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loop looks the node up (with backoff, lookup.go) and heartbeats; a refused heartbeat
// (token wiped because the node was rebooted into a new deploy, say) sends
// it back to lookup.
func (a *Agent) loop(ctx context.Context) {
	reason := "looked up"
	for ctx.Err() == nil {
		if !a.haveToken() {
			if a.lookupUntilFound(ctx) != nil {
				return
			}
			reason = "looked up"
		}
		a.mu.Lock()
		node, token, inspect := a.nodeUUID, a.token, a.inspectPending
		a.mu.Unlock()
		if inspect {
			if err := a.inspect(ctx, node, token); err != nil {
				a.log.Warn("sending the inventory failed; retrying", "err", err)
			} else {
				a.mu.Lock()
				a.inspectPending = false
				a.mu.Unlock()
			}
		}
		if err := a.heartbeat(ctx); err != nil {
			var he *httpError
			if errors.As(err, &he) && he.status >= 400 && he.status < 500 && he.status != http.StatusConflict {
				a.log.Info("heartbeat refused; looking up again", "status", he.status)
				a.forget()
				continue
			}
			a.log.Warn("heartbeat failed", "err", err)
		} else {
			a.log.Debug("heartbeat sent", "node", node, "reason", reason)
		}
		woken, err := a.pause(ctx, a.interval())
		if err != nil {
			return
		}
		reason = "interval"
		if woken {
			reason = "command finished"
		}
	}
}

// heartbeatNow makes the loop heartbeat at once (a pending request is enough:
// several finished commands make one heartbeat).
func (a *Agent) heartbeatNow() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// pause waits d, or less if heartbeatNow is called (woken), or until ctx
// ends.
func (a *Agent) pause(ctx context.Context, d time.Duration) (woken bool, err error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, nil
	case <-a.wake:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (a *Agent) haveToken() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token != ""
}

func (a *Agent) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.token, a.nodeUUID, a.inspectPending = "", "", false
}

// currentToken is the token the command API checks ("" before a lookup).
func (a *Agent) currentToken() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token
}

// allowMD5 says whether md5 image checksums may be verified: the conductor
// decided (the lookup's agent_md5_checksum_enable) or the operator did.
func (a *Agent) allowMD5() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.AllowMD5 || a.md5Enabled
}

// interval is the next heartbeat's delay: 0.3–0.6 × heartbeat_timeout.
func (a *Agent) interval() time.Duration {
	if a.cfg.HeartbeatInterval > 0 {
		return a.cfg.HeartbeatInterval
	}
	a.mu.Lock()
	t := a.timeout
	a.mu.Unlock()
	if t <= 0 {
		t = 300 * time.Second
	}
	return time.Duration(float64(t) * (0.3 + 0.3*rand.Float64()))
}

type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

func (a *Agent) heartbeat(ctx context.Context) error {
	a.mu.Lock()
	node, token := a.nodeUUID, a.token
	a.mu.Unlock()
	body, _ := json.Marshal(ipa.Heartbeat{CallbackURL: a.cfg.AdvertiseURL, AgentToken: token, AgentVersion: Version})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		strings.TrimRight(a.cfg.APIURL, "/")+"/v1/heartbeat/"+url.PathEscape(node), strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.68")
	return a.do(req, nil)
}

func (a *Agent) do(req *http.Request, out any) error {
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return &httpError{status: resp.StatusCode, body: strings.TrimSpace(string(b))}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// inspectWait is the provision state of a node booted to be inspected.
const inspectWait = "inspect wait"

// inspect posts the hardware inventory to /v1/continue_inspection, with the
// token, for the node the lookup found waiting for inspection.
func (a *Agent) inspect(ctx context.Context, node, token string) error {
	inv, err := ReadInventory(a.cfg.RootDir, a.cfg.Disk)
	if err != nil {
		return fmt.Errorf("inspection: %w", err)
	}
	b, _ := json.Marshal(inv)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	body, _ := json.Marshal(ipa.InspectionData{Inventory: m, AgentToken: token})
	q := url.Values{"node_uuid": {node}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		strings.TrimRight(a.cfg.APIURL, "/")+"/v1/continue_inspection?"+q.Encode(), strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.84")
	if err := a.do(req, nil); err != nil {
		return fmt.Errorf("inspection: %w", err)
	}
	a.log.Info("inventory sent", "node", node, "disks", len(inv.Disks), "interfaces", len(inv.Interfaces))
	return nil
}
