package ring

import (
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
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

func TestLive(t *testing.T) {
	now := time.Now()
	conds := []*model.Conductor{
		{Hostname: "alive", ConductorGroup: "g", Drivers: []string{"fake-hardware"}, Online: true, UpdatedAt: now.Add(-time.Second)},
		{Hostname: "stale", Drivers: []string{"fake-hardware"}, Online: true, UpdatedAt: now.Add(-time.Hour)},
		{Hostname: "offline", Drivers: []string{"fake-hardware"}, Online: false, UpdatedAt: now},
		{Hostname: "api-only", Online: true, UpdatedAt: now},
	}
	got := Live(conds, now, time.Minute)
	if len(got) != 1 || got[0] != (Member{Host: "alive", Group: "g"}) {
		t.Fatalf("Live = %v, want only alive/g", got)
	}
}
