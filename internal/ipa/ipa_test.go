package ipa

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

func TestParseChecksum(t *testing.T) {
	h64, h128, h32 := strings.Repeat("ab", 32), strings.Repeat("CD", 64), strings.Repeat("0", 32)
	tests := []struct {
		name, algo, value string
		md5               bool
		want, err         string
	}{
		{name: "sha256 by length", value: h64, want: "sha256:" + h64},
		{name: "sha512 by length, lower-cased", value: h128, want: "sha512:" + strings.ToLower(h128)},
		{name: "prefixed", value: "SHA256:" + h64, want: "sha256:" + h64},
		{name: "named algorithm", algo: "SHA512", value: h128, want: "sha512:" + strings.ToLower(h128)},
		{name: "md5 refused", value: h32, err: "md5 image checksums are not allowed"},
		{name: "md5 allowed", value: h32, md5: true, want: "md5:" + h32},
		{name: "empty", value: " ", err: "no image checksum"},
		{name: "unknown length", value: "abcd", err: "matches no supported algorithm"},
		{name: "not hex", value: strings.Repeat("z", 64), err: "not hexadecimal"},
		{name: "wrong length for algorithm", algo: "sha256", value: h128, err: "64 hex digits"},
		{name: "unsupported", algo: "crc32", value: "abcd", err: "unsupported"},
		{name: "prefix disagrees", algo: "sha512", value: "sha256:" + h64, err: "differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseChecksum(tt.algo, tt.value, tt.md5)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || c.String() != tt.want {
				t.Fatalf("= %v, %v; want %s", c, err, tt.want)
			}
		})
	}
}

// TestChecksumSources: the conductor prefers instance_info's os_hash pair;
// the agent reads image_info's pair, else its checksum by length (newer
// IPA's reading; Ironic 21.4 sends a sha256 there).
func TestChecksumSources(t *testing.T) {
	h64, h128 := strings.Repeat("ab", 32), strings.Repeat("cd", 64)
	c, err := InstanceChecksum(map[string]any{"image_checksum": h64, "image_os_hash_algo": "sha512", "image_os_hash_value": h128}, false)
	if err != nil || c.Algo != "sha512" {
		t.Fatalf("InstanceChecksum = %v, %v", c, err)
	}
	if _, err := InstanceChecksum(map[string]any{}, false); err == nil || !strings.Contains(err.Error(), "image_checksum") {
		t.Fatalf("no checksum: %v", err)
	}
	c, err = ImageInfoChecksum(map[string]any{"checksum": h64}, false)
	if err != nil || c.Algo != "sha256" || !c.Matches(mustHex(t, h64)) {
		t.Fatalf("ImageInfoChecksum = %v, %v", c, err)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWireShapes: the JSON of the shared types is IPA's (golden strings
// from extensions/base.py and errors.py serialisation).
func TestWireShapes(t *testing.T) {
	res := CommandResult{ID: "i", Name: "prepare_image", Status: StatusFailed, Error: CommandFailed("boom")}
	b, _ := json.Marshal(res)
	want := `{"id":"i","command_name":"prepare_image","command_status":"FAILED","command_error":{"type":"CommandExecutionError","code":500,"message":"Command execution failed","details":"boom"},"command_result":null}`
	if string(b) != want {
		t.Fatalf("CommandResult JSON =\n%s\nwant\n%s", b, want)
	}
	if res.ErrorText() != "boom" {
		t.Fatalf("ErrorText = %q", res.ErrorText())
	}
	b, _ = json.Marshal(NewFault(401, FaultTokenInvalid))
	if string(b) != `{"faultcode":"Client","faultstring":"401 Unauthorized: Token invalid."}` {
		t.Fatalf("Fault JSON = %s", b)
	}
	steps := StepsResult("clean", CleanSteps())
	b, _ = json.Marshal(steps)
	if !strings.Contains(string(b), `"clean_steps":{"AnvilHardwareManager":[{"abortable":true,"interface":"deploy","priority":99,"reboot_requested":false,"step":"erase_devices_metadata"}`) ||
		!strings.Contains(string(b), `"hardware_manager_version":{"AnvilHardwareManager":"1.0"}`) {
		t.Fatalf("StepsResult = %s", b)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:9999/v1/commands/?wait=false&agent_token=SECRET": "http://127.0.0.1:9999/v1/commands/",
		"http://user:pw@10.0.0.1/x?agent_token=SECRET#frag":                "http://10.0.0.1/x",
		"%zz?agent_token=SECRET":                                           "%zz",
	} {
		if got := RedactURL(in); got != want || strings.Contains(got, "SECRET") {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
