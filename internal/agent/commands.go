package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/agent/agentapi"
)

// command is one accepted command and its outcome.
type command struct {
	res     agentapi.CommandResult
	written atomic.Int64
	done    bool
}

// commands runs the command API: one command at a time (like IPA), results
// kept for polling.
type commands struct {
	a    *Agent
	mu   sync.Mutex
	byID map[string]*command
	busy bool
	wg   sync.WaitGroup
	ctx  context.Context
	stop context.CancelFunc
}

func newCommands(a *Agent) *commands {
	ctx, stop := context.WithCancel(context.Background())
	return &commands{a: a, byID: map[string]*command{}, ctx: ctx, stop: stop}
}

// wait cancels running commands and waits for them.
func (c *commands) wait() {
	c.stop()
	c.wg.Wait()
}

func (c *commands) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/commands", c.authed(c.post))
	mux.HandleFunc("POST /v1/commands/{$}", c.authed(c.post))
	mux.HandleFunc("GET /v1/commands/{id}", c.authed(c.get))
	mux.HandleFunc("GET /v1/commands", c.authed(c.list))
	return mux
}

// authed checks the caller presents CommandKey(token).
func (c *commands) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(agentapi.HeaderToken)
		if got == "" {
			got = r.URL.Query().Get("agent_token")
		}
		want := c.a.commandKey()
		if want == "" || !agentapi.Equal(got, want) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"faultstring": "Invalid or missing agent token."})
			return
		}
		h(w, r)
	}
}

func (c *commands) post(w http.ResponseWriter, r *http.Request) {
	var req agentapi.CommandRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"faultstring": "malformed command: " + err.Error()})
		return
	}
	name := req.Name
	if i := strings.LastIndexByte(name, '.'); i >= 0 { // IPA's "standby.write_image"
		name = name[i+1:]
	}
	run, ok := c.a.handlers()[name]
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"faultstring": fmt.Sprintf("unknown command %q", req.Name)})
		return
	}
	c.mu.Lock()
	if c.busy {
		c.mu.Unlock()
		writeJSON(w, http.StatusConflict, map[string]string{"faultstring": "another command is running"})
		return
	}
	c.busy = true
	cmd := &command{res: agentapi.CommandResult{ID: uuid.NewString(), Name: name, Status: agentapi.StatusRunning}}
	c.byID[cmd.res.ID] = cmd
	snap := c.snapshot(cmd)
	c.mu.Unlock()
	c.a.log.Info("command started", "command", name, "id", cmd.res.ID)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		result, err := run(c.ctx, req.Params, &cmd.written)
		// The conductor learns a command's end from the next heartbeat:
		// send it now, once the result below is recorded.
		defer c.a.heartbeatNow()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.busy, cmd.done = false, true
		cmd.res.Result = result
		if err != nil {
			cmd.res.Status, cmd.res.Error = agentapi.StatusFailed, err.Error()
			c.a.log.Warn("command failed", "command", name, "id", cmd.res.ID, "err", err)
			return
		}
		cmd.res.Status = agentapi.StatusSucceeded
		c.a.log.Info("command succeeded", "command", name, "id", cmd.res.ID)
	}()
	writeJSON(w, http.StatusOK, snap)
}

func (c *commands) snapshot(cmd *command) agentapi.CommandResult {
	r := cmd.res
	r.Written = cmd.written.Load()
	return r
}

func (c *commands) get(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	cmd, ok := c.byID[r.PathValue("id")]
	var snap agentapi.CommandResult
	if ok {
		snap = c.snapshot(cmd)
	}
	c.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"faultstring": "no such command"})
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

func (c *commands) list(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	out := make([]agentapi.CommandResult, 0, len(c.byID))
	for _, cmd := range c.byID {
		out = append(out, c.snapshot(cmd))
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"commands": out})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// handlerFunc runs one command; progress counts bytes written.
type handlerFunc func(ctx context.Context, params map[string]any, progress *atomic.Int64) (map[string]any, error)

func (a *Agent) handlers() map[string]handlerFunc {
	return map[string]handlerFunc{
		agentapi.CmdGetSteps:             a.getSteps,
		agentapi.CmdWriteImage:           a.writeImage,
		agentapi.CmdEraseDevicesMetadata: a.eraseMetadata,
		agentapi.CmdEraseDevices:         a.eraseDevices,
		agentapi.CmdGetInventory:         a.getInventory,
		agentapi.CmdFinalizeRescue:       a.finalizeRescue,
		agentapi.CmdPowerOff:             a.powerOff,
	}
}

func (a *Agent) getSteps(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
	return map[string]any{"clean_steps": []map[string]any{
		{"interface": "deploy", "step": agentapi.CmdEraseDevicesMetadata, "priority": 99, "abortable": true},
		{"interface": "deploy", "step": agentapi.CmdEraseDevices, "priority": 0, "abortable": true},
	}}, nil
}

func (a *Agent) powerOff(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
	// A real machine would power itself off here; the agent only reports
	// that it was asked (the conductor powers off through the BMC).
	return map[string]any{"powered_off": false}, nil
}

// finalizeRescue stores the rescue password's hash (a real ramdisk would put
// it in /etc/shadow for the rescue user). Only a crypt hash is accepted; the
// value is never logged nor returned.
func (a *Agent) finalizeRescue(_ context.Context, params map[string]any, _ *atomic.Int64) (map[string]any, error) {
	hash, _ := params[agentapi.ParamRescuePassword].(string)
	if hashed, _ := params[agentapi.ParamHashed].(bool); !hashed || !agentapi.IsCryptHash(hash) {
		return nil, errors.New("finalize_rescue: rescue_password must be a SHA-512 crypt hash (hashed=true)")
	}
	root := a.cfg.RootDir
	if root == "" {
		root = "/"
	}
	p := filepath.Join(root, agentapi.RescuePasswordFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("finalize_rescue: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(hash+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("finalize_rescue: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return nil, fmt.Errorf("finalize_rescue: %w", err)
	}
	return map[string]any{"rescue_password_file": p}, nil
}

func (a *Agent) getInventory(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
	inv, err := ReadInventory(a.cfg.RootDir, a.cfg.Disk)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(inv)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return map[string]any{"inventory": m}, nil
}
