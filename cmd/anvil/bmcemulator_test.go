package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// emulatorMachine is what GET /emulator/machines shows of one machine.
type emulatorMachine struct {
	ID         string `json:"id"`
	RedfishURL string `json:"redfish_url"`
	Knobs      struct {
		Latency        string  `json:"latency"`
		LatencyJitter  string  `json:"latency_jitter"`
		FailureRate    float64 `json:"failure_rate"`
		MaxSessions    int     `json:"max_sessions"`
		SessionTimeout string  `json:"session_timeout"`
		RateLimit      float64 `json:"rate_limit"`
	} `json:"knobs"`
	BMC *struct {
		Refused     int64 `json:"sessions_refused"`
		RateLimited int64 `json:"rate_limited"`
		Transient   int64 `json:"transient_failures"`
	} `json:"bmc"`
}

// startEmulator runs `anvil bmc-emulator` with args on a free port until
// the test ends; it returns the control endpoint's machines URL.
func startEmulator(t *testing.T, args ...string) string {
	t.Helper()
	pr, pw := io.Pipe()
	cmd := newBMCEmulator(pw, io.Discard)
	cmd.SetArgs(append([]string{"--listen", "127.0.0.1:0", "--password", "secret"}, args...))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	t.Cleanup(func() { cancel(); <-done })
	knobsAt := regexp.MustCompile(`knobs at (http://\S+/emulator/machines)`)
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := knobsAt.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			return m[1]
		}
	}
	t.Fatalf("bmc-emulator printed no control endpoint: %v", <-done)
	return ""
}

func emulatorMachines(t *testing.T, url string) []emulatorMachine {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Machines []emulatorMachine `json:"machines"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page.Machines
}

// redfish calls one machine's BMC with basic auth (path under its root).
func redfish(t *testing.T, method, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.SetBasicAuth("admin", "secret")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestBMCEmulatorLimitFlags: each BMC-limit flag of `anvil bmc-emulator`
// shows in every machine's knobs on the control endpoint and holds on the
// machine's own BMC port.
func TestBMCEmulatorLimitFlags(t *testing.T) {
	url := startEmulator(t, "-n", "2", "--bmc-ports", "--max-sessions", "1", "--session-timeout", "1m",
		"--rate-limit", "2", "--latency", "30ms", "--latency-jitter", "10ms")
	ms := emulatorMachines(t, url)
	if len(ms) != 2 || ms[0].RedfishURL == "" || ms[0].RedfishURL == ms[1].RedfishURL {
		t.Fatalf("--bmc-ports: machines %+v, want 2 with a Redfish port each", ms)
	}
	for _, m := range ms {
		k := m.Knobs
		if k.Latency != "30ms" || k.LatencyJitter != "10ms" || k.MaxSessions != 1 || k.SessionTimeout != "1m0s" || k.RateLimit != 2 {
			t.Fatalf("%s: knobs %+v, want the flags' values", m.ID, k)
		}
	}
	bmc := ms[0].RedfishURL

	// --max-sessions 1: a second login is refused (the first two calls:
	// within --rate-limit 2)
	login := `{"UserName": "admin", "Password": "secret"}`
	var codes []int
	for range 2 {
		codes = append(codes, redfish(t, "POST", bmc+"/redfish/v1/SessionService/Sessions", login).StatusCode)
	}
	if codes[0] != http.StatusCreated || codes[1] != http.StatusBadRequest {
		t.Fatalf("two logins: HTTP %v, want 201 then 400 (--max-sessions 1)", codes)
	}

	// --rate-limit 2: a burst gets 503 with Retry-After
	limited := false
	for range 8 {
		resp := redfish(t, "GET", bmc+"/redfish/v1/Systems", "")
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("8 calls in a burst were all answered: --rate-limit 2 did not hold")
	}
	// --latency, on the other machine (its own rate budget): a call
	// takes at least the latency
	start := time.Now()
	if resp := redfish(t, "GET", ms[1].RedfishURL+"/redfish/v1/", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("service root: HTTP %d", resp.StatusCode)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("a call took %v, less than --latency 30ms", d)
	}
	after := emulatorMachines(t, url)[0]
	if after.BMC == nil || after.BMC.Refused != 1 || after.BMC.RateLimited == 0 {
		t.Fatalf("the BMC's counters %+v, want 1 login refused and calls rate-limited", after.BMC)
	}
}

// TestBMCEmulatorFailureRateFlag: --failure-rate 1 makes every call of a
// BMC fail transiently (503).
func TestBMCEmulatorFailureRateFlag(t *testing.T) {
	url := startEmulator(t, "-n", "1", "--bmc-ports", "--failure-rate", "1")
	m := emulatorMachines(t, url)[0]
	if m.Knobs.FailureRate != 1 {
		t.Fatalf("knobs %+v, want failure_rate 1", m.Knobs)
	}
	if resp := redfish(t, "GET", m.RedfishURL+"/redfish/v1/Systems", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a call with --failure-rate 1: HTTP %d, want 503", resp.StatusCode)
	}
	if after := emulatorMachines(t, url)[0]; after.BMC == nil || after.BMC.Transient == 0 {
		t.Fatalf("the BMC's counters %+v, want a transient failure counted", after.BMC)
	}
}

// TestBMCEmulatorSessionTimeoutFlag: with --session-timeout a session left
// idle that long is refused (401) and counted as expired.
func TestBMCEmulatorSessionTimeoutFlag(t *testing.T) {
	url := startEmulator(t, "-n", "1", "--bmc-ports", "--session-timeout", "300ms")
	m := emulatorMachines(t, url)[0]
	if m.Knobs.SessionTimeout != "300ms" {
		t.Fatalf("knobs %+v, want session_timeout 300ms", m.Knobs)
	}
	resp := redfish(t, "POST", m.RedfishURL+"/redfish/v1/SessionService/Sessions", `{"UserName": "admin", "Password": "secret"}`)
	token := resp.Header.Get("X-Auth-Token")
	if resp.StatusCode != http.StatusCreated || token == "" {
		t.Fatalf("login: HTTP %d, token %q", resp.StatusCode, token)
	}
	withToken := func() int {
		req, _ := http.NewRequest("GET", m.RedfishURL+"/redfish/v1/Systems", nil)
		req.Header.Set("X-Auth-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := withToken(); code != http.StatusOK {
		t.Fatalf("a call in the session: HTTP %d", code)
	}
	time.Sleep(600 * time.Millisecond) // the session idles past its timeout
	if code := withToken(); code != http.StatusUnauthorized {
		t.Fatalf("a call after the session idled past --session-timeout: HTTP %d, want 401", code)
	}
}
