package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// TestWriteDiagnosis: the human output leads with the class and what to
// do, shows the evidence, the newest console lines, and prints no
// terminal control sequence a console or a client sent.
func TestWriteDiagnosis(t *testing.T) {
	var tail strings.Builder
	for i := range 40 {
		tail.WriteString("line " + string(rune('A'+i%26)) + "\r\n")
	}
	tail.WriteString("\x1b[2J\x1b]0;pwned\x07last line\r\n")
	d := &model.Diagnosis{NodeUUID: "n1", CreatedAt: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC), ProvisionState: "deploy failed",
		FromState: "wait call-back", LastError: "Timeout reached\x1b[31m", Class: "callback-timeout", Summary: "The agent never called back.",
		Hint: "Watch the console tail.", Evidence: []string{"evidence \x1b[1mone"}, ConsoleTail: tail.String(),
		Boot:      []model.BootEvent{{Service: "tftp", Remote: "10.0.0.9:2000", File: "\"\\x1b[2J\"", Status: "not found"}},
		AgentLogs: &model.AgentLogs{Collect: "never", Note: "not collected"}}
	var out strings.Builder
	if err := writeDiagnosis(&out, d); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"Class:       callback-timeout", "What to do:  Watch the console tail.", "  - evidence one",
		"  | last line", "deploy_logs_collect=never): not collected", "tftp"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("a control character reached the terminal:\n%q", got)
	}
	if n := strings.Count(got, "  | "); n != diagnoseTailLines {
		t.Errorf("%d console lines shown, want the last %d", n, diagnoseTailLines)
	}
}
