package ring

import (
	"strings"
	"testing"
)

func TestCheckGroup(t *testing.T) {
	for _, ok := range []string{"", "rack-1", "Zone_A.2", strings.Repeat("g", 255)} {
		if err := CheckGroup(ok); err != nil {
			t.Errorf("CheckGroup(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"rack 1", "a/b", "é", strings.Repeat("g", 256)} {
		if err := CheckGroup(bad); err == nil {
			t.Errorf("CheckGroup(%q) accepted", bad)
		}
	}
}
