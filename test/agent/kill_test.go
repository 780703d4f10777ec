package agent_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAgentKilledMidWrite: the agent dies while streaming an image; the
// deploy fails when the callback times out, and a new agent then deploys.
func TestAgentKilledMidWrite(t *testing.T) {
	api := startServer(t, "--deploy-callback-timeout", "2", "--check-provision-state-interval", "1")
	img := make([]byte, 4*mib)
	_, _ = rand.Read(img)
	s := sha256.Sum256(img)
	sum := hex.EncodeToString(s[:])
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(img)))
		if r.URL.Path == "/stall.img" { // half the image, then stall
			_, _ = w.Write(img[:len(img)/2])
			w.(http.Flusher).Flush()
			select {
			case started <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = w.Write(img)
	}))
	t.Cleanup(func() { close(release); srv.Close() })

	const mac = "52:54:00:aa:bb:03"
	node := createNode(t, api, "kill-node", mac)
	mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, []map[string]any{{"op": "add", "path": "/automated_clean", "value": false}})
	disk := tempDisk(t, 16*mib, 0)
	ag := startAgent(t, api, mac, disk)
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")

	setImage(t, api, node, srv.URL+"/stall.img", sum)
	provision(t, api, node, "active")
	select {
	case <-started:
	case <-time.After(stateTimeout):
		t.Fatal("the agent never started downloading")
	}
	ag.Kill()
	n := waitState(t, api, node, "deploy failed")
	// The agent may die before or after it answered the conductor's
	// prepare_image call (it starts the download first): the deploy fails
	// either on the unanswered call or on the missing callback.
	if le, _ := n["last_error"].(string); !strings.Contains(le, "Timeout reached while waiting for callback") &&
		!strings.Contains(le, "starting standby.prepare_image on the agent: agent at") {
		t.Fatalf("last_error = %q", le)
	}

	startAgent(t, api, mac, disk)
	setImage(t, api, node, srv.URL+"/good.img", sum)
	provision(t, api, node, "active")
	waitState(t, api, node, "active")
}
