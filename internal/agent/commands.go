package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

func (a *Agent) finalizeRescue(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
	return nil, fmt.Errorf("finalize_rescue: %w", errNotImplemented)
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
