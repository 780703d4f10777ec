// Package config reads `anvil serve` settings from a file and gives them to
// the command's flags. The file is flat TOML or YAML: one `name = value` or
// `name: value` per line, `#` comments, optional quotes, and `[section]`
// headers (ignored, so Ironic-style `[conductor]` groups read naturally).
// Names are the flag names, with dashes or underscores
// (deploy_callback_timeout = 1800). Flags given on the command line win.
package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Apply reads r and sets every flag of fs that the command line did not set.
// An unknown name or a bad value is an error naming the line.
func Apply(fs *pflag.FlagSet, r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if i := strings.Index(text, "#"); i >= 0 && !strings.ContainsAny(text[:i], `"'`) {
			text = strings.TrimSpace(text[:i])
		}
		if text == "" || strings.HasPrefix(text, "[") || text == "---" {
			continue
		}
		key, val, ok := split(text)
		if !ok {
			return fmt.Errorf("%s:%d: expected `name = value` or `name: value`", name, line)
		}
		flagName := strings.ReplaceAll(key, "_", "-")
		f := fs.Lookup(flagName)
		if f == nil || flagName == "config" {
			return fmt.Errorf("%s:%d: unknown setting %q", name, line, key)
		}
		if f.Changed {
			continue
		}
		if err := fs.Set(flagName, val); err != nil {
			return fmt.Errorf("%s:%d: %s: %v", name, line, key, err)
		}
	}
	return sc.Err()
}

func split(text string) (key, val string, ok bool) {
	i := strings.IndexAny(text, "=:")
	if i <= 0 {
		return "", "", false
	}
	key = strings.TrimSpace(text[:i])
	val = strings.TrimSpace(text[i+1:])
	if len(val) >= 2 && (val[0] == '"' && val[len(val)-1] == '"' || val[0] == '\'' && val[len(val)-1] == '\'') {
		val = val[1 : len(val)-1]
	}
	return key, val, key != ""
}

// Seconds is a duration flag that takes a number of seconds, as Ironic's
// options do (`--deploy-callback-timeout 3`), or a Go duration (`3s`, `30m`).
type Seconds struct{ D *time.Duration }

// String prints the value in seconds.
func (s Seconds) String() string {
	if s.D == nil {
		return "0"
	}
	return strconv.FormatFloat(s.D.Seconds(), 'f', -1, 64)
}

// Set parses seconds or a Go duration; negative values are refused.
func (s Seconds) Set(v string) error {
	d, err := ParseSeconds(v)
	if err != nil {
		return err
	}
	*s.D = d
	return nil
}

// Type names the flag's value in help.
func (s Seconds) Type() string { return "seconds" }

// ParseSeconds parses "3", "2.5" (seconds) or "3s", "30m" (Go durations).
func ParseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("%q is neither a number of seconds nor a duration like 30s", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", v)
	}
	return d, nil
}
