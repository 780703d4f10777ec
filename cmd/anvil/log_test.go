package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestLoggerMasksSecrets: the agent's, the emulator's and serve's log lines
// (all newLogger) never carry a token, a password or a key.
func TestLoggerMasksSecrets(t *testing.T) {
	var buf bytes.Buffer
	lvl, err := parseLogLevel("debug")
	if err != nil {
		t.Fatal(err)
	}
	log := newLogger(&buf, lvl)
	log.Debug("lookup answered", "agent_token", "tok-SECRET-1", "url", "http://admin:pw-SECRET-2@127.0.0.1/redfish")
	log.Warn("kernel command line ipa-agent-token=tok-SECRET-3 password=pw-SECRET-4", "err", errors.New("bad ipmi_password=pw-SECRET-5"))
	log.With("driver_info", map[string]any{"redfish_password": "pw-SECRET-6"}).Info("x")
	if out := buf.String(); strings.Contains(out, "SECRET") || strings.Count(out, "\n") != 3 {
		t.Errorf("log shows a secret or lost a line:\n%s", out)
	}
	if _, err := parseLogLevel("loud"); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("parseLogLevel(loud) = %v", err)
	}
}
