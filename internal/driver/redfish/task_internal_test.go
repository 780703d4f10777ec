package redfish

import (
	"strings"
	"testing"
)

// A finished task monitor's body decides a held RAID change's outcome, as
// Ironic's RAID task check does: Completed with OK or Warning succeeds.
func TestTaskOutcome(t *testing.T) {
	for _, tc := range []struct {
		body, err string
	}{
		{`{"TaskState": "Completed", "TaskStatus": "OK"}`, ""},
		{`{"TaskState": "Completed", "TaskStatus": "Warning"}`, ""},
		{`{"TaskState": "Completed"}`, ""},
		{``, ""},                                         // 204: nothing to read
		{`{"@odata.id": "/redfish/v1/x/Volumes/1"}`, ""}, // the created resource
		{`{"TaskState": "Exception", "TaskStatus": "Critical", "Messages": [{"Message": "drive failed"}, {"Message": ""}]}`,
			"task /m ended Exception (Critical): drive failed"},
		{`{"TaskState": "Completed", "TaskStatus": "Critical", "Messages": [{"Message": "a"}, {"Message": "b"}]}`,
			"task /m ended Completed (Critical): a; b"},
		{`{"TaskState": "Killed"}`, "task /m ended Killed ()"},
	} {
		err := taskOutcome("/m", []byte(tc.body))
		if (err == nil) != (tc.err == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.err)
		}
	}
}
