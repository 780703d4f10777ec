package events

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSERoundTrip(t *testing.T) {
	e := Event{ID: 101, Type: TypeUpdated, Node: "u1", Name: "web1", Changed: []string{FieldLastError},
		State: &NodeState{ProvisionState: "deploy failed", LastError: "line one\nline two"}}
	e.Encode()
	var wire []byte
	wire = AppendSSE(wire, &e)
	wire = AppendHeartbeat(wire, 7)
	wire = append(wire, "retry: 10\r\ndata: a\r\ndata: b\r\n\r\n"...)
	r := newSSEReader(strings.NewReader(string(wire)))
	tests := []struct {
		name  string
		id    string
		event string
		data  string
	}{
		{"event", "101", TypeUpdated, string(e.data)},
		{"heartbeat", "7", "", ""},
		{"multi-line data, CRLF", "", "", "a\nb"},
	}
	for _, tt := range tests {
		m, err := r.next()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if m.id != tt.id || m.event != tt.event || string(m.data) != tt.data {
			t.Fatalf("%s: got id %q event %q data %q", tt.name, m.id, m.event, m.data)
		}
	}
	if _, err := r.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	if strings.Count(string(e.data), "\n") != 0 {
		t.Fatalf("event JSON has a newline: %s", e.data)
	}
}

func TestNodeStateJSON(t *testing.T) {
	s := NodeState{ProvisionState: "active", Maintenance: true}
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"provision_state":"active","target_provision_state":null,"provision_updated_at":null,` +
		`"power_state":null,"target_power_state":null,"maintenance":true,"maintenance_reason":null,` +
		`"fault":null,"last_error":null,"reservation":null,"updated_at":null}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back NodeState
	if err := back.UnmarshalJSON(b); err != nil || back != s {
		t.Fatalf("round trip %+v %v", back, err)
	}
}
