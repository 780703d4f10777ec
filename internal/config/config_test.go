package config

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func flags() (*pflag.FlagSet, *time.Duration, *bool, *string) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	d := new(time.Duration)
	fs.Var(Seconds{d}, "deploy-callback-timeout", "")
	b := fs.Bool("force-power-state-during-sync", true, "")
	s := fs.String("listen", "127.0.0.1:6385", "")
	fs.String("config", "", "")
	return fs, d, b, s
}

func TestApply(t *testing.T) {
	cases := []struct {
		name, file, args string
		wantD            time.Duration
		wantB            bool
		wantS            string
		wantErr          string
	}{
		{"toml with section", "[conductor]\ndeploy_callback_timeout = 3\nforce_power_state_during_sync = false\n", "", 3 * time.Second, false, "127.0.0.1:6385", ""},
		{"yaml", "deploy-callback-timeout: 30m  # half an hour\nlisten: \"127.0.0.1:7000\"\n", "", 30 * time.Minute, true, "127.0.0.1:7000", ""},
		{"command line wins", "listen = 127.0.0.1:1\n", "--listen=127.0.0.1:2", 0, true, "127.0.0.1:2", ""},
		{"unknown setting", "nope = 1\n", "", 0, true, "", `t.conf:1: unknown setting "nope"`},
		{"bad value", "deploy_callback_timeout = soon\n", "", 0, true, "", "t.conf:1: deploy_callback_timeout"},
		{"config itself", "config = x\n", "", 0, true, "", "unknown setting"},
		{"no separator", "listen\n", "", 0, true, "", "expected `name = value`"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs, d, b, s := flags()
			if tc.args != "" {
				if err := fs.Parse(strings.Fields(tc.args)); err != nil {
					t.Fatal(err)
				}
			}
			err := Apply(fs, strings.NewReader(tc.file), "t.conf")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *d != tc.wantD || *b != tc.wantB || *s != tc.wantS {
				t.Fatalf("got %v %v %q", *d, *b, *s)
			}
		})
	}
}

func TestParseSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{"3": 3 * time.Second, "0.5": 500 * time.Millisecond, "3s": 3 * time.Second, "2m": 2 * time.Minute} {
		if got, err := ParseSeconds(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "-1", "-3s"} {
		if _, err := ParseSeconds(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
