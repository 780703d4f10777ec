package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/oci/ocitest"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestDeployOCIWithBaremetalCLI: python-ironicclient's `baremetal`, with
// its defaults, sets an oci:// image and its pull secret, deploys and
// waits; the disk holds the image, and `node show` masks the secret.
func TestDeployOCIWithBaremetalCLI(t *testing.T) {
	bm := testbin.BaremetalCLI(t)
	reg := ocitest.New(t, ocitest.BearerAuth, "puller", "cli-s3cret")
	img := randomBytes(t, 1*mib+11)
	reg.PushArtifact(t, "cli/img", "v1", img, "application/octet-stream", "d.raw")
	api := startServer(t, "--oci-permit-fallback-to-http")
	const mac = "52:54:00:aa:bb:27"
	node := createNode(t, api, "cli-node", mac)
	disk := tempDisk(t, 8*mib, 0)
	startAgent(t, api, mac, disk)
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")

	baremetal := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bm, args...)
		cmd.Env = append(os.Environ(), "OS_ENDPOINT="+api, "OS_AUTH_TYPE=none", "LC_ALL=C.UTF-8")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("baremetal %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
	baremetal("node", "set", node, "--instance-info", "image_source=oci://"+reg.Host+"/cli/img:v1",
		"--instance-info", "image_pull_secret=puller:cli-s3cret")
	baremetal("node", "deploy", node, "--wait", "60")
	if d, _ := os.ReadFile(disk); !bytes.Equal(d[:len(img)], img) {
		t.Fatal("the disk does not hold the image")
	}
	var shown struct {
		ProvisionState string         `json:"provision_state"`
		InstanceInfo   map[string]any `json:"instance_info"`
	}
	out := baremetal("node", "show", node, "-f", "json")
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("node show: %v\n%s", err, out)
	}
	if shown.ProvisionState != "active" || shown.InstanceInfo["image_pull_secret"] != "******" || strings.Contains(out, "cli-s3cret") {
		t.Fatalf("node show: %s", out)
	}
}
