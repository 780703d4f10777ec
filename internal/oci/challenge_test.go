package oci

import (
	"fmt"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	scheme, p := parseChallenge(`Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"`)
	if scheme != "Bearer" || p["realm"] != "https://auth.example/token" || p["service"] != "registry.example" || p["scope"] != "repository:a/b:pull,push" {
		t.Errorf("%s %v", scheme, p)
	}
	if scheme, p := parseChallenge(`Basic realm=reg`); scheme != "Basic" || p["realm"] != "reg" {
		t.Errorf("unquoted: %s %v", scheme, p)
	}
}

// FuzzParseChallenge: any header parses without panicking, and a
// challenge written from a realm and service without quotes or commas
// reads back as them.
func FuzzParseChallenge(f *testing.F) {
	f.Add(`Bearer realm="https://a/token",service="s"`, "https://a/t", "svc")
	f.Add(`Basic`, "", "")
	f.Add(`Bearer realm="unterminated`, "x", "y")
	f.Fuzz(func(t *testing.T, h, realm, service string) {
		parseChallenge(h)
		for _, c := range realm + service {
			if c == '"' || c == ',' || c == '\\' {
				return
			}
		}
		_, p := parseChallenge(fmt.Sprintf(`Bearer realm="%s",service="%s"`, realm, service))
		if p["realm"] != realm || p["service"] != service {
			t.Fatalf("realm %q service %q read back as %v", realm, service, p)
		}
	})
}
