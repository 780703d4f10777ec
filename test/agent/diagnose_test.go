package agent_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// diagnosis reads the node's diagnosis (GET /v1/nodes/{node}/diagnosis).
func diagnosis(t *testing.T, api, node string) (*model.Diagnosis, string) {
	t.Helper()
	r := mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/diagnosis", nil)
	var d model.Diagnosis
	if err := json.Unmarshal(r.Body, &d); err != nil {
		t.Fatalf("diagnosis: %v: %s", err, r.Body)
	}
	return &d, string(r.Body)
}

// wantClass fails unless d has class and a line of evidence containing
// evidence.
func wantClass(t *testing.T, d *model.Diagnosis, class, evidence string) {
	t.Helper()
	if d.Class != class || !strings.Contains(strings.Join(d.Evidence, "\n"), evidence) || d.Hint == "" {
		t.Fatalf("diagnosis class %q (want %q), evidence %q (want %q), last_error %q", d.Class, class, d.Evidence, evidence, d.LastError)
	}
}

// agentDeploy enrolls a node whose agent runs as args (after "agent"),
// cleans it (so the agent has looked up and erased the disk) and deploys
// the image at source with checksum, which must fail.
func agentDeploy(t *testing.T, api, name, mac, source, checksum string, node func(uuid string), agent []string) string {
	t.Helper()
	uuid := createNode(t, api, name, mac)
	if node != nil {
		node(uuid)
	}
	testbin.Start(t, "anvil agent ("+name+")", agent[0], agent[1:]...)
	provision(t, api, uuid, "manage")
	waitState(t, api, uuid, "manageable")
	provision(t, api, uuid, "provide")
	waitState(t, api, uuid, "available")
	setImage(t, api, uuid, source, checksum)
	provision(t, api, uuid, "active")
	waitState(t, api, uuid, "deploy failed")
	return uuid
}

func agentArgs(t *testing.T, api, mac, disk string, extra ...string) []string {
	return append([]string{anvilBin, "agent", "--api-url", api, "--mac", mac, "--disk", disk,
		"--listen", testbin.FreeAddr(t), "--heartbeat-interval", "100ms"}, extra...)
}

// TestDiagnoseAgentFailures: real deploys through the real agent, each
// failed by one fault, each diagnosed with its class and evidence: an
// image checksum mismatch (with the agent's logs collected), a disk
// whose writes fail (the agent's file size limit below the disk's size:
// EFBIG), and a UEFI boot loader install on an image with no EFI system
// partition.
func TestDiagnoseAgentFailures(t *testing.T) {
	logs := t.TempDir()
	api := startServer(t, "--deploy-logs-local-path", logs)
	imgs, _, sum := imageServer(t)

	t.Run("checksum mismatch", func(t *testing.T) {
		const mac = "52:54:00:d1:00:01"
		node := agentDeploy(t, api, "diag-sum", mac, imgs.URL+"/good.img", strings.Repeat("0", 64), nil,
			agentArgs(t, api, mac, tempDisk(t, 64*mib, 0)))
		d, _ := diagnosis(t, api, node)
		wantClass(t, d, "image-checksum-mismatch", "checksum mismatch")
		if d.AgentLogs == nil || d.AgentLogs.Path == "" || !strings.HasPrefix(d.AgentLogs.Path, logs) || d.AgentLogs.Bytes == 0 {
			t.Errorf("agent logs %+v: the tarball saved in %s", d.AgentLogs, logs)
		}
	})
	t.Run("disk write error", func(t *testing.T) {
		const mac = "52:54:00:d1:00:02"
		disk := tempDisk(t, 64*mib, 0)
		// Cleaning writes the disk's last MiB: the agent's file size
		// limit is lowered (prlimit) once it is done, so that the image's
		// writes past the first MiB fail (EFBIG: Go ignores SIGXFSZ).
		testbin.Need(t, "prlimit", "util-linux")
		args := agentArgs(t, api, mac, disk)
		uuid := createNode(t, api, "diag-disk", mac)
		p := testbin.Start(t, "anvil agent (diag-disk)", args[0], args[1:]...)
		provision(t, api, uuid, "manage")
		waitState(t, api, uuid, "manageable")
		provision(t, api, uuid, "provide")
		waitState(t, api, uuid, "available")
		limit := strconv.Itoa(mib)
		if out, err := exec.Command("prlimit", "--pid", strconv.Itoa(p.Cmd.Process.Pid), "--fsize="+limit+":"+limit).CombinedOutput(); err != nil {
			t.Fatalf("prlimit: %v: %s", err, out)
		}
		setImage(t, api, uuid, imgs.URL+"/good.img", sum)
		provision(t, api, uuid, "active")
		waitState(t, api, uuid, "deploy failed")
		d, _ := diagnosis(t, api, uuid)
		wantClass(t, d, "disk-write-error", "file too large")
	})
	t.Run("install_bootloader failure", func(t *testing.T) {
		const mac = "52:54:00:d1:00:03"
		node := agentDeploy(t, api, "diag-grub", mac, imgs.URL+"/good.img", sum, func(uuid string) {
			mustCall(t, 200, "PATCH", api+"/v1/nodes/"+uuid, []map[string]any{
				{"op": "add", "path": "/properties/capabilities", "value": "boot_mode:uefi"}})
		}, agentArgs(t, api, mac, tempDisk(t, 64*mib, 0), "--efivars", t.TempDir()))
		d, _ := diagnosis(t, api, node)
		wantClass(t, d, "bootloader-install-failed", "install_bootloader")
	})
}

// TestDiagnoseCallbackFailures: deploys whose agent never calls back,
// failed by the deploy callback timeout: one whose agent looks up with a
// MAC no port has (agent-lookup-failed, the MAC it tried in the evidence)
// and one with no agent at all (callback-timeout).
func TestDiagnoseCallbackFailures(t *testing.T) {
	api := startServer(t, "--deploy-callback-timeout", "4", "--check-provision-state-interval", "1")
	imgs, _, sum := imageServer(t)
	enroll := func(name, mac string) string {
		uuid := createNode(t, api, name, mac)
		mustCall(t, 200, "PATCH", api+"/v1/nodes/"+uuid, []map[string]any{{"op": "replace", "path": "/automated_clean", "value": false}})
		provision(t, api, uuid, "manage")
		waitState(t, api, uuid, "manageable")
		provision(t, api, uuid, "provide")
		waitState(t, api, uuid, "available")
		setImage(t, api, uuid, imgs.URL+"/good.img", sum)
		return uuid
	}
	wrong := enroll("diag-mac", "52:54:00:d2:00:01")
	agent := testbin.Start(t, "anvil agent (wrong MAC)", anvilBin, agentArgs(t, api, "52:54:00:d2:00:99", tempDisk(t, 8*mib, 0))[1:]...)
	provision(t, api, wrong, "active")
	waitState(t, api, wrong, "deploy failed")
	d, _ := diagnosis(t, api, wrong)
	wantClass(t, d, "agent-lookup-failed", "52:54:00:d2:00:99")
	wantClass(t, d, "agent-lookup-failed", "the node's ports: 52:54:00:d2:00:01")
	if err := agent.Stop(t); err != nil {
		t.Logf("agent: %v", err)
	}

	silent := enroll("diag-silent", "52:54:00:d2:00:02")
	provision(t, api, silent, "active")
	waitState(t, api, silent, "deploy failed")
	d, _ = diagnosis(t, api, silent)
	wantClass(t, d, "callback-timeout", "Timeout reached while waiting for callback for node "+silent)
}

// TestDeployLogsCollectModes: deploy_logs_collect=always saves the agent's
// logs after a successful deploy too; never saves none even when a deploy
// fails, and the diagnosis says so.
func TestDeployLogsCollectModes(t *testing.T) {
	imgs, _, sum := imageServer(t)
	t.Run("always", func(t *testing.T) {
		logs := t.TempDir()
		api := startServer(t, "--deploy-logs-local-path", logs, "--deploy-logs-collect", "always")
		const mac = "52:54:00:d3:00:01"
		uuid := createNode(t, api, "logs-always", mac)
		startAgent(t, api, mac, tempDisk(t, 64*mib, 0))
		provision(t, api, uuid, "manage")
		waitState(t, api, uuid, "manageable")
		provision(t, api, uuid, "provide")
		waitState(t, api, uuid, "available")
		setImage(t, api, uuid, imgs.URL+"/good.img", sum)
		provision(t, api, uuid, "active")
		waitState(t, api, uuid, "active")
		got, _ := filepath.Glob(filepath.Join(logs, uuid+"_deploy_*.tar.gz"))
		if len(got) != 1 {
			t.Fatalf("logs after a successful deploy with always: %v", got)
		}
	})
	t.Run("never", func(t *testing.T) {
		logs := t.TempDir()
		api := startServer(t, "--deploy-logs-local-path", logs, "--deploy-logs-collect", "never")
		const mac = "52:54:00:d3:00:02"
		node := agentDeploy(t, api, "logs-never", mac, imgs.URL+"/good.img", strings.Repeat("0", 64), nil,
			agentArgs(t, api, mac, tempDisk(t, 64*mib, 0)))
		if got, _ := os.ReadDir(logs); len(got) != 0 {
			t.Errorf("logs saved with never: %v", got)
		}
		d, _ := diagnosis(t, api, node)
		if d.AgentLogs == nil || d.AgentLogs.Collect != "never" || d.AgentLogs.Path != "" || !strings.Contains(d.AgentLogs.Note, "never") {
			t.Errorf("agent logs in the diagnosis: %+v", d.AgentLogs)
		}
	})
	t.Run("a mode Ironic does not know", func(t *testing.T) {
		out, err := exec.Command(anvilBin, "serve", "--listen", "127.0.0.1:0", "--database", filepath.Join(t.TempDir(), "a.db"),
			"--deploy-logs-collect", "sometimes").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "deploy_logs_collect must be always, on_failure or never") {
			t.Errorf("serve with --deploy-logs-collect sometimes: %v: %s", err, out)
		}
	})
}
