package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	prov := Want{Provision: "manageable"}
	power := Want{Power: "power on"}
	tests := []struct {
		name    string
		snap    nodeSnap
		want    Want
		done    bool
		errWant string
	}{
		{"reached and released", nodeSnap{ProvisionState: "manageable"}, prov, true, ""},
		{"reached, lock still held", nodeSnap{ProvisionState: "manageable", Reservation: "c1"}, prov, false, ""},
		{"transitional", nodeSnap{ProvisionState: "verifying", TargetProvision: "manageable", Reservation: "c1"}, prov, false, ""},
		{"failure state", nodeSnap{ProvisionState: "clean failed", TargetProvision: "manageable", LastError: "boom"}, prov, true,
			"Node n failed to reach state manageable. It's in state clean failed, and has error: boom"},
		{"error state", nodeSnap{ProvisionState: "error", LastError: "gone"}, Want{Provision: "available"}, true,
			"Node n failed to reach state available. It's in state error, and has error: gone"},
		{"waiting for a failure state succeeds", nodeSnap{ProvisionState: "deploy failed"}, Want{Provision: "deploy failed"}, true, ""},
		{"other stable state", nodeSnap{ProvisionState: "enroll", LastError: "verify failed"}, prov, true,
			"Node n failed to reach state manageable. It's in unexpected stable state enroll, and has error: verify failed"},
		{"other stable state, still locked", nodeSnap{ProvisionState: "enroll", Reservation: "c1"}, prov, false, ""},
		{"transitional goal", nodeSnap{ProvisionState: "deploying", TargetProvision: "active", Reservation: "c1"}, Want{Provision: "deploying"}, true, ""},
		{"power reached", nodeSnap{PowerState: "power on"}, power, true, ""},
		{"power pending", nodeSnap{PowerState: "power off", TargetPower: "power on", Reservation: "c1"}, power, false, ""},
		{"power error", nodeSnap{PowerState: "error", LastError: "bmc"}, power, true,
			"Node n failed to reach state power on. It's in state error, and has error: bmc"},
		{"power unchanged and released", nodeSnap{PowerState: "power off", LastError: "fake power failure"}, power, true,
			"Node n failed to reach state power on. It's in unexpected stable state power off, and has error: fake power failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, err := judge("n", tt.snap, tt.want)
			if done != tt.done || errString(err) != tt.errWant {
				t.Errorf("judge = %v, %q; want %v, %q", done, errString(err), tt.done, tt.errWant)
			}
		})
	}
}

// TestPollerTimeout drives the poller with a fake clock: a node that never
// settles times out with its state and last_error in the message.
func TestPollerTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"uuid": "u1", "name": "n1", "provision_state": "deploying", "target_provision_state": "active", "reservation": "c1", "last_error": null}`)
	}))
	defer srv.Close()
	c := testClient(t, srv, 0, nil)
	now := time.Unix(0, 0)
	var rounds int
	p := &Poller{Client: c, Now: func() time.Time { return now },
		Sleep: func(ctx context.Context, d time.Duration) error { rounds++; now = now.Add(d); return nil }}
	var doneCalls int
	out := p.Wait(t.Context(), []string{"n1"}, Want{Provision: "active", Timeout: 10 * time.Second,
		Done: func(int, Outcome) { doneCalls++ }})
	want := "Node n1 failed to reach state active in 10 seconds (it is in state deploying)"
	if errString(out[0].Err) != want || out[0].State != "deploying" {
		t.Errorf("outcome %+v, want %q", out[0], want)
	}
	var we *WaitError
	if !errors.As(out[0].Err, &we) || we.Timeout != 10*time.Second {
		t.Errorf("want a *WaitError with the timeout, got %#v", out[0].Err)
	}
	if doneCalls != 1 || rounds < 5 || rounds > 30 {
		t.Errorf("done called %d times after %d rounds", doneCalls, rounds)
	}
}

// TestPollerListsManyNodes checks that a large wait costs one list request
// per round, and that an unknown node fails alone.
func TestPollerListsManyNodes(t *testing.T) {
	var lists, gets int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/nodes" {
			gets++
			ironicError(w, 404, "no")
			return
		}
		lists++
		var b strings.Builder
		b.WriteString(`{"nodes": [`)
		for i := range 20 {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"uuid": "u%d", "name": "n%d", "provision_state": "active"}`, i, i)
		}
		b.WriteString(`]}`)
		fmt.Fprint(w, b.String())
	}))
	defer srv.Close()
	c := testClient(t, srv, 0, nil)
	nodes := []string{"ghost"}
	for i := range 20 {
		nodes = append(nodes, fmt.Sprintf("n%d", i))
	}
	out := (&Poller{Client: c}).Wait(t.Context(), nodes, Want{Provision: "active"})
	if !IsNotFound(out[0].Err) {
		t.Errorf("ghost: %v", out[0].Err)
	}
	for i, o := range out[1:] {
		if o.Err != nil || o.State != "active" {
			t.Errorf("node %d: %+v", i, o)
		}
	}
	if lists != 1 || gets != 0 {
		t.Errorf("%d list and %d node requests, want 1 and 0", lists, gets)
	}
}

func TestPollerInterrupted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"uuid": "u1", "provision_state": "cleaning", "target_provision_state": "available"}`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	p := &Poller{Client: testClient(t, srv, 0, nil), Sleep: func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}}
	out := p.Wait(ctx, []string{"u1"}, Want{Provision: "available"})
	if !errors.Is(out[0].Err, context.Canceled) || out[0].State != "cleaning" {
		t.Errorf("outcome %+v", out[0])
	}
}
