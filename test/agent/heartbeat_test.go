package agent_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestDefaultHeartbeatSettings runs provide and deploy with the agent's
// default heartbeat (no --heartbeat-interval: every 0.3–0.6 × the
// conductor's heartbeat_timeout of 300 s, so 90 s or more apart). Each
// finishes only because the agent heartbeats as soon as a command ends (as
// IPA does): otherwise the conductor would see the erase or the image write
// done no sooner than the next regular heartbeat, past stateTimeout.
// Cleaning ends with the node powered off and its agent forgotten, so the
// deploy boots a fresh agent, as power on does on a real machine.
func TestDefaultHeartbeatSettings(t *testing.T) {
	api := startServer(t)
	imgs, image, sum := imageServer(t)
	const mac = "52:54:00:aa:bb:0d"
	node := createNode(t, api, "default-heartbeat", mac)
	disk := tempDisk(t, 64*mib, 0xAA)
	boot := func() *process {
		return start(t, "anvil agent", "agent", "--api-url", api, "--mac", mac, "--disk", disk,
			"--listen", testbin.FreeAddr(t), "--log-level", "debug")
	}
	agent := boot()

	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")
	_ = agent.Stop(t)
	boot()
	setImage(t, api, node, imgs.URL+"/good.img", sum)
	provision(t, api, node, "active")
	waitState(t, api, node, "active")
	d, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d[:len(image)], image) {
		t.Fatalf("the disk does not start with the image")
	}
}
