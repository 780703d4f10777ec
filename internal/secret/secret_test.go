package secret_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/secret"
)

func TestString(t *testing.T) {
	cases := []struct{ in, want string }{
		// oslo.utils' mask_password docstring and tests.
		{`"password" : "aaaaa"`, `"password" : "******"`},
		{`'adminPass' : 'aaaaa'`, `'adminPass' : '******'`},
		{`'admin_pass' : 'aaaaa'`, `'admin_pass' : '******'`},
		{`--password aaaaa`, `--password ******`},
		{`<password>aaaaa</password>`, `<password>******</password>`},
		{`'original_password' : 'aaaaa'`, `'original_password' : '******'`},
		{`mysql --password=s3cr3t x`, `mysql --password=****** x`},
		// What Ironic masks in kernel_append_params and a redfish_address.
		{`nofb nomodeset password=Kern3lS3cret vga=normal`, `nofb nomodeset password=****** vga=normal`},
		{`https://bmc.example/redfish/v1?password=R3dfishS3cret&verify=1`, `https://bmc.example/redfish/v1?password=******`},
		{`ipmitool -I lanplus -H 10.0.0.5 -U admin -P x password=hunter2`, `ipmitool -I lanplus -H 10.0.0.5 -U admin -P x password=******`},
		// Beyond oslo: URL credentials and Authorization headers.
		{`http://admin:UrlS3cret@10.0.0.9:8000/redfish`, `http://admin:******@10.0.0.9:8000/redfish`},
		{`Authorization: Basic YWRtaW46cHc=`, `Authorization: Basic ******`},
		{`nothing secret here`, `nothing secret here`},
	}
	for _, c := range cases {
		if got := secret.String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		if got := secret.String(secret.String(c.in)); got != c.want {
			t.Errorf("String is not idempotent on %q: %q", c.in, got)
		}
	}
}

func TestValue(t *testing.T) {
	in := map[string]any{
		"ipmi_password": "Ipmi$ecret", "ipmi_username": "admin", "snmp_priv_key": "Snmp$ecret",
		"redfish_address":      "https://bmc/?password=Q$ecret",
		"kernel_append_params": "console=ttyS0 password=K$ecret",
		"nested":               map[string]any{"token": "T$ecret", "list": []any{"x password=L$ecret", 3.0}},
		"configdrive":          map[string]any{"meta_data": map[string]any{"admin_pass": "C$ecret"}},
		"agent_secret_token":   nil,
	}
	out, _ := json.Marshal(secret.Value(in))
	for _, s := range []string{"Ipmi$ecret", "Snmp$ecret", "Q$ecret", "K$ecret", "T$ecret", "L$ecret", "C$ecret"} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("%s left in %s", s, out)
		}
	}
	if !bytes.Contains(out, []byte(`"ipmi_username":"admin"`)) {
		t.Errorf("a non-secret was masked: %s", out)
	}
	if in["ipmi_password"] != "Ipmi$ecret" {
		t.Error("Value changed its input")
	}
}

func TestJSON(t *testing.T) {
	got := string(secret.JSON([]byte(`[{"op": "add", "path": "/driver_info/ipmi_password", "value": "P$ecret"}, {"configdrive": "H4sIcd"}]`)))
	if strings.Contains(got, "H4sIcd") || strings.Contains(got, "P$ecret") {
		t.Errorf("configdrive or PATCHed password left: %s", got)
	}
	if !strings.Contains(got, `"path":"/driver_info/ipmi_password"`) {
		t.Errorf("the patch path was lost: %s", got)
	}
	if got := string(secret.JSON([]byte("not json password=x"))); got != "not json password=******" {
		t.Errorf("non-JSON: %s", got)
	}
}

func TestReplaceAttr(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: secret.ReplaceAttr}))
	log.Info("running ipmitool password=M$ecret", "err", errors.New("failed: http://u:E$ecret@h/"),
		"agent_token", "A$ecret", "driver_info", map[string]any{"ipmi_password": "D$ecret"},
		"cmd", "x --password S$ecret")
	for _, s := range []string{"M$ecret", "E$ecret", "A$ecret", "D$ecret", "S$ecret"} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("%s logged: %s", s, buf.String())
		}
	}
}

// TestHandler: a logger built without ReplaceAttr is masked by Handler,
// attributes bound with With and groups included.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(secret.Handler(slog.NewTextHandler(&buf, nil))).With("ipmi_password", "W$ecret")
	log.Info("x", slog.Group("g", "token", "G$ecret", "cmd", "a password=H$ecret"), "err", errors.New("password=R$ecret"))
	for _, s := range []string{"W$ecret", "G$ecret", "H$ecret", "R$ecret"} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("%s logged: %s", s, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "g.token=******") {
		t.Errorf("group lost: %s", buf.String())
	}
}

func BenchmarkStringClean(b *testing.B) {
	s := "console=ttyS0,115200 nofb nomodeset vga=normal ipa-insecure=1"
	for b.Loop() {
		_ = secret.String(s)
	}
}

func BenchmarkStringSecret(b *testing.B) {
	s := "console=ttyS0,115200 nofb nomodeset vga=normal password=abc ipa-insecure=1"
	for b.Loop() {
		_ = secret.String(s)
	}
}
