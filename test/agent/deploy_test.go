package agent_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
)

const mib = 1 << 20

// imageServer serves a random 8 MiB image at /good.img, a 65 MiB one at
// /big.img (larger than the 64 MiB disk) and 404 elsewhere.
func imageServer(t *testing.T) (srv *httptest.Server, image []byte, sum string) {
	t.Helper()
	image = make([]byte, 8*mib)
	_, _ = rand.Read(image)
	s := sha256.Sum256(image)
	big := make([]byte, 65*mib)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good.img":
			http.ServeContent(w, r, "good.img", timeZero, bytes.NewReader(image))
		case "/big.img":
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			_, _ = w.Write(big)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, image, hex.EncodeToString(s[:])
}

// TestDeployLifecycle: enroll → manage → provide (the agent erases the disk's
// metadata) → three failed deploys (wrong checksum, missing image, image
// larger than the disk), each with its own last_error → a correct deploy →
// active, with the image on the disk byte for byte.
func TestDeployLifecycle(t *testing.T) {
	api := startServer(t)
	imgs, image, sum := imageServer(t)
	const mac = "52:54:00:aa:bb:01"
	node := createNode(t, api, "agent-node", mac)
	disk := tempDisk(t, 64*mib, 0xAA)

	// Not expecting an agent: a plain 404.
	r := call(t, "GET", api+"/v1/lookup?addresses="+mac, nil)
	if r.Status != http.StatusNotFound {
		t.Fatalf("lookup of an enrolled node: HTTP %d, want 404: %s", r.Status, r.Body)
	}

	startAgent(t, api, mac, disk)

	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")
	d, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if !allBytes(d[:mib], 0) || !allBytes(d[len(d)-mib:], 0) || d[2*mib] != 0xAA {
		t.Fatalf("automated cleaning did not erase exactly the first and last MiB of the disk")
	}

	fails := []struct {
		name, source, checksum, want string
	}{
		{"wrong checksum", imgs.URL + "/good.img", strings.Repeat("0", 64), "image checksum mismatch"},
		{"missing image", imgs.URL + "/missing.img", sum, "unreachable: HTTP 404"},
		{"disk too small", imgs.URL + "/big.img", sum, "disk too small"},
	}
	for _, f := range fails {
		setImage(t, api, node, f.source, f.checksum)
		provision(t, api, node, "active")
		n := waitState(t, api, node, "deploy failed")
		le, _ := n["last_error"].(string)
		contains(t, f.name+": last_error", le, f.want)
	}

	setImage(t, api, node, imgs.URL+"/good.img", sum)
	provision(t, api, node, "active")
	n := waitState(t, api, node, "active")
	if n["last_error"] != nil {
		t.Errorf("last_error after a good deploy: %v", n["last_error"])
	}
	d, err = os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 64*mib {
		t.Fatalf("disk file grew or shrank to %d bytes", len(d))
	}
	if !bytes.Equal(d[:len(image)], image) {
		t.Fatalf("the disk does not start with the image")
	}
	dii := n["driver_internal_info"].(map[string]any)
	if got, _ := dii["agent_bytes_written"].(float64); int(got) != len(image) {
		t.Errorf("driver_internal_info.agent_bytes_written = %v, want %d", dii["agent_bytes_written"], len(image))
	}
	if n["power_state"] != "power on" {
		t.Errorf("power_state = %v after deploy", n["power_state"])
	}
	bd := mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/management/boot_device", nil).JSON(t)
	if bd["boot_device"] != "disk" {
		t.Errorf("boot device after deploy = %v, want disk", bd["boot_device"])
	}
	// Active: no agent expected, so no lookup.
	if r := call(t, "GET", api+"/v1/lookup?addresses="+mac, nil); r.Status != http.StatusNotFound {
		t.Errorf("lookup of an active node: HTTP %d, want 404", r.Status)
	}
}

func allBytes(b []byte, v byte) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return true
}
