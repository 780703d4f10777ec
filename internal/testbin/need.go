package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Strict reports whether a missing test prerequisite (a tool, a Debian
// package, a Python module) fails the test rather than skipping it: under
// CI (the environment variable CI set), where the test command installs
// every prerequisite, or when one of envs (a package's own switch, such as
// ANVIL_VM_TEST) is "1". This is the one place that decides.
func Strict(envs ...string) bool {
	if os.Getenv("CI") != "" {
		return true
	}
	for _, e := range envs {
		if os.Getenv(e) == "1" {
			return true
		}
	}
	return false
}

// Missing ends the test for a missing prerequisite described by msg: it
// fails under Strict(envs...) and skips otherwise.
func Missing(t testing.TB, msg string, envs ...string) {
	t.Helper()
	if Strict(envs...) {
		t.Fatalf("%s (required under CI: the test command installs it)", msg)
	}
	t.Skip(msg)
}

// Need returns the path of tool, a command looked up in PATH (then in
// /usr/sbin and /sbin, which a user's PATH may lack: dnsmasq lives there)
// or an absolute path that must exist; when it is absent the test ends
// through Missing, naming debPackage, the Debian package that provides it.
func Need(t testing.TB, tool, debPackage string, envs ...string) string {
	t.Helper()
	if path, err := lookTool(tool); err == nil {
		return path
	}
	Missing(t, fmt.Sprintf("%s not found (apt-get install %s)", tool, debPackage), envs...)
	return ""
}

func lookTool(tool string) (string, error) {
	if filepath.IsAbs(tool) {
		if _, err := os.Stat(tool); err != nil {
			return "", err
		}
		return tool, nil
	}
	path, err := exec.LookPath(tool)
	if err == nil {
		return path, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p, serr := exec.LookPath(filepath.Join(dir, tool)); serr == nil {
			return p, nil
		}
	}
	return "", err
}

// BaremetalCLISwitch turns on the tests that run python-ironicclient's
// `baremetal` (a Python start per command makes them slow); the test
// command sets it.
const BaremetalCLISwitch = "ANVIL_BAREMETAL_CLI"

// BaremetalCLI returns the path of the `baremetal` CLI for a test that runs
// it: the test skips unless BaremetalCLISwitch is "1", and then fails if
// the CLI is missing.
func BaremetalCLI(t testing.TB) string {
	t.Helper()
	if os.Getenv(BaremetalCLISwitch) != "1" {
		t.Skip("set " + BaremetalCLISwitch + "=1 to run the baremetal CLI")
	}
	return Need(t, "baremetal", "python3-ironicclient", BaremetalCLISwitch)
}
