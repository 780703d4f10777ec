package events_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/server"
	"github.com/anvil-metal/anvil/pkg/events"
)

// Wait for a node to become manageable without polling: subscribe to its
// changes (a node must exist to be followed; snapshot=true sends its state
// first), then ask for the change, and read events until the node rests.
// (The example starts its own `anvil serve`; a client outside this module
// would connect to a running one and import only pkg/events.)
func ExampleSubscribe() {
	base, stop := startAnvil()
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send("POST", base+"/v1/nodes", `{"name": "web1", "driver": "fake-hardware"}`)
	ch, err := events.Subscribe(ctx, base, events.Filter{Nodes: []string{"web1"}, Snapshot: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	send("PUT", base+"/v1/nodes/web1/states/provision", `{"target": "manage"}`)
	for e := range ch {
		switch {
		case e.Type == events.TypeSnapshot:
			fmt.Println(e.Type, e.Name, e.State.ProvisionState)
		case e.State != nil && events.Resting(*e.State) && e.State.ProvisionState == "manageable":
			fmt.Println(e.Name, "is", e.State.ProvisionState)
			return
		}
	}
	// Output:
	// node.snapshot web1 enroll
	// web1 is manageable
}

// startAnvil runs `anvil serve` on a free loopback port over a fresh SQLite
// database and returns its URL and a function that stops it.
func startAnvil() (string, func()) {
	dir, err := os.MkdirTemp("", "anvil-example")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Serve(ctx, server.Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "anvil.db"),
			HostID: "example", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(a string) { addr <- a }})
	}()
	select {
	case a := <-addr:
		return "http://" + a, func() { cancel(); <-done; _ = os.RemoveAll(dir) }
	case err := <-done:
		panic(err)
	}
}

// send makes one API request at the latest microversion.
func send(method, url, body string) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		panic(fmt.Sprintf("%s %s: %s", method, url, resp.Status))
	}
}
