package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// command is one accepted command and its outcome.
type command struct {
	res     ipa.CommandResult
	written atomic.Int64
	done    chan struct{} // closed when res is final
}

// commands serves IPA's command API: one command at a time (a second one
// while an asynchronous command runs is refused with 409, as IPA's
// AgentIsBusy), results kept in order for polling.
type commands struct {
	a     *Agent
	mu    sync.Mutex
	byID  map[string]*command
	order []*command
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
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

// handler routes IPA's paths (with and without the /v1 prefix, as IPA).
func (c *commands) handler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range []string{"/v1/commands", "/commands"} {
		mux.HandleFunc("POST "+p+"/{$}", c.authed(true, c.post))
		mux.HandleFunc("POST "+p, c.authed(true, c.post))
		mux.HandleFunc("GET "+p+"/{$}", c.authed(false, c.list))
		mux.HandleFunc("GET "+p, c.authed(false, c.list))
		mux.HandleFunc("GET "+p+"/{id}", c.authed(false, c.get))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeFault(w, http.StatusNotFound, "404 Not Found: The requested URL was not found on the server.")
	})
	return mux
}

// authed checks the agent_token query parameter as IPA does: a command
// needs the token the lookup handed this agent. Reading results without a
// token is allowed, as IPA of Ironic 21.4's era allows it (Ironic 21.4 polls
// without one); a token that is given must be right.
func (c *commands) authed(required bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got, given := r.URL.Query()[ipa.QueryToken]
		token := c.a.currentToken()
		if (required || given) && !ipa.TokenMatches(token, strings.Join(got, "")) {
			c.a.log.Warn("command API request refused: invalid or missing agent token", "method", r.Method, "path", r.URL.Path)
			writeFault(w, http.StatusUnauthorized, ipa.FaultTokenInvalid)
			return
		}
		h(w, r)
	}
}

func (c *commands) post(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   *string         `json:"name"`
		Params json.RawMessage `json:"params"`
	}
	var params map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil ||
		req.Name == nil || json.Unmarshal(req.Params, &params) != nil || params == nil {
		writeFault(w, http.StatusBadRequest, ipa.FaultBadRequestBody)
		return
	}
	name := *req.Name
	ext, cmdName, ok := strings.Cut(name, ".")
	if !ok || ext == "" || cmdName == "" {
		writeFault(w, http.StatusBadRequest, ipa.FaultBadCommandName)
		return
	}
	spec, status, fault := c.a.lookupCommand(ext, cmdName)
	if status != 0 {
		writeFault(w, status, fault)
		return
	}
	if spec.validate != nil {
		if err := spec.validate(params); err != nil {
			writeFault(w, http.StatusBadRequest, "Invalid command parameters: "+err.Error())
			return
		}
	}
	c.mu.Lock()
	if n := len(c.order); n > 0 && !c.order[n-1].isDone() {
		running := c.order[n-1].res.Name
		c.mu.Unlock()
		writeFault(w, http.StatusConflict, ipa.FaultBusy(running))
		return
	}
	cmd := &command{res: ipa.CommandResult{ID: uuid.NewString(), Name: cmdName, Status: ipa.StatusRunning},
		done: make(chan struct{})}
	c.byID[cmd.res.ID] = cmd
	c.order = append(c.order, cmd)
	c.mu.Unlock()
	c.a.log.Info("command started", "command", name, "id", cmd.res.ID)
	if !spec.async {
		c.finish(cmd, name)(spec.run(c.ctx, params, &cmd.written))
		writeJSON(w, http.StatusOK, c.snapshot(cmd))
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		res, err := spec.run(c.ctx, params, &cmd.written)
		c.finish(cmd, name)(res, err)
		// The conductor learns a command's end from the next heartbeat:
		// send it now (IPA's force_heartbeat), once the result is recorded.
		c.a.heartbeatNow()
	}()
	if strings.EqualFold(r.URL.Query().Get(ipa.QueryWait), "true") {
		select {
		case <-cmd.done:
		case <-r.Context().Done():
		}
	}
	writeJSON(w, http.StatusOK, c.snapshot(cmd))
}

// finish returns the function recording a command's outcome.
func (c *commands) finish(cmd *command, name string) func(map[string]any, error) {
	return func(result map[string]any, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		defer close(cmd.done)
		var vm *versionMismatch
		switch {
		case errors.As(err, &vm):
			cmd.res.Status, cmd.res.Error = ipa.StatusVersionMismatch, &ipa.RESTError{Type: "VersionMismatch",
				Code: 500, Message: "Hardware managers version mismatch", Details: vm.Error()}
			c.a.log.Warn("command refused", "command", name, "id", cmd.res.ID, "err", err)
		case err != nil:
			cmd.res.Status, cmd.res.Error = ipa.StatusFailed, ipa.CommandFailed(err.Error())
			c.a.log.Warn("command failed", "command", name, "id", cmd.res.ID, "err", err)
		default:
			cmd.res.Status, cmd.res.Result = ipa.StatusSucceeded, result
			c.a.log.Info("command succeeded", "command", name, "id", cmd.res.ID)
		}
	}
}

// forgetFinished drops the results of finished commands (a running one is
// kept, to be polled and to keep the agent busy).
func (c *commands) forgetFinished() {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.order[:0]
	for _, cmd := range c.order {
		if cmd.isDone() {
			delete(c.byID, cmd.res.ID)
			continue
		}
		kept = append(kept, cmd)
	}
	c.order = kept
}

func (cmd *command) isDone() bool {
	select {
	case <-cmd.done:
		return true
	default:
		return false
	}
}

func (c *commands) snapshot(cmd *command) ipa.CommandResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := cmd.res
	r.BytesWritten = cmd.written.Load()
	return r
}

func (c *commands) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c.mu.Lock()
	cmd, ok := c.byID[id]
	c.mu.Unlock()
	if !ok {
		writeFault(w, http.StatusNotFound, ipa.FaultNoSuchCommand(id))
		return
	}
	if strings.EqualFold(r.URL.Query().Get(ipa.QueryWait), "true") {
		select {
		case <-cmd.done:
		case <-r.Context().Done():
		}
	}
	writeJSON(w, http.StatusOK, c.snapshot(cmd))
}

// list answers every command, oldest first (Ironic reads the last one).
func (c *commands) list(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	out := ipa.CommandList{Commands: make([]ipa.CommandResult, 0, len(c.order))}
	for _, cmd := range c.order {
		r := cmd.res
		r.BytesWritten = cmd.written.Load()
		out.Commands = append(out.Commands, r)
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func writeFault(w http.ResponseWriter, status int, s string) {
	writeJSON(w, status, ipa.NewFault(status, s))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
