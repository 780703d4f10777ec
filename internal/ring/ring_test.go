package ring

import (
	"fmt"
	"slices"
	"testing"
)

// keys returns n UUID-shaped keys.
func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i*2654435761%(1<<32), i)
	}
	return out
}

func members(group string, hosts ...string) []Member {
	out := make([]Member, len(hosts))
	for i, h := range hosts {
		out[i] = Member{Host: h, Group: group}
	}
	return out
}

func owners(r *Ring, ks []string, group string) map[string]string {
	out := make(map[string]string, len(ks))
	for _, k := range ks {
		out[k] = r.Owner(k, group)
	}
	return out
}

func TestDeterministic(t *testing.T) {
	a := New(members("", "c1", "c2", "c3"), 0, 0)
	b := New(append(members("", "c3", "c1"), Member{Host: "c2"}, Member{Host: "c1"}), 0, 0)
	for _, k := range keys(5000) {
		if a.Owner(k, "") != b.Owner(k, "") {
			t.Fatalf("key %s: owner %s vs %s for the same members in another order", k, a.Owner(k, ""), b.Owner(k, ""))
		}
	}
}

func TestGroups(t *testing.T) {
	r := New(append(members("", "d1", "d2"), members("Rack-A", "a1", "a2")...), 0, 0)
	seen := map[string]int{}
	for _, k := range keys(2000) {
		def, rack := r.Owner(k, ""), r.Owner(k, "rack-a")
		if def != "d1" && def != "d2" {
			t.Fatalf("default-group key owned by %q", def)
		}
		if rack != "a1" && rack != "a2" {
			t.Fatalf("rack-a key owned by %q", rack)
		}
		seen[def]++
		seen[rack]++
		if o := r.Owner(k, "nobody"); o != "" {
			t.Fatalf("group without conductors: owner %q", o)
		}
		if h := r.Hosts(k, "nobody"); h != nil {
			t.Fatalf("group without conductors: hosts %v", h)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("owners seen: %v, want all four", seen)
	}
}

func TestReplicas(t *testing.T) {
	r := New(members("", "c1", "c2", "c3"), 0, 2)
	for _, k := range keys(2000) {
		h := r.Hosts(k, "")
		if len(h) != 2 || h[0] == h[1] || h[0] != r.Owner(k, "") {
			t.Fatalf("key %s: hosts %v, owner %s", k, h, r.Owner(k, ""))
		}
	}
	big := New(members("", "c1", "c2"), 0, 5)
	if h := big.Hosts("x", ""); len(h) != 2 {
		t.Fatalf("replicas beyond the group size: %v, want both hosts", h)
	}
}

// TestBalance: each of 5 conductors owns its share of 100,000 keys within
// ±35% (32 points per conductor give a few tens of per cent of spread).
func TestBalance(t *testing.T) {
	hosts := []string{"c1", "c2", "c3", "c4", "c5"}
	r := New(members("", hosts...), 0, 0)
	count := map[string]int{}
	ks := keys(100_000)
	for _, k := range ks {
		count[r.Owner(k, "")]++
	}
	fair := len(ks) / len(hosts)
	for _, h := range hosts {
		if c := count[h]; c < fair*65/100 || c > fair*135/100 {
			t.Errorf("%s owns %d keys, fair share %d", h, c, fair)
		}
	}
}

// TestMovementOnJoin: a conductor joining k others takes keys only for
// itself (none move between the others) and about 1/(k+1) of them.
func TestMovementOnJoin(t *testing.T) {
	ks := keys(100_000)
	for k := 1; k <= 6; k++ {
		hosts := make([]string, k)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("conductor-%d", i)
		}
		before := owners(New(members("", hosts...), 0, 0), ks, "")
		after := owners(New(members("", append(slices.Clone(hosts), "joiner")...), 0, 0), ks, "")
		moved := 0
		for _, key := range ks {
			if before[key] != after[key] {
				moved++
				if after[key] != "joiner" {
					t.Fatalf("k=%d: key %s moved from %s to %s, not to the joiner", k, key, before[key], after[key])
				}
			}
		}
		fair := len(ks) / (k + 1)
		if moved == 0 || moved > fair*3/2 {
			t.Errorf("k=%d: %d keys moved to the joiner, fair share %d", k, moved, fair)
		}
	}
}

// TestMovementOnLeave: when a conductor leaves, only its keys move.
func TestMovementOnLeave(t *testing.T) {
	ks := keys(50_000)
	hosts := []string{"c1", "c2", "c3", "c4"}
	before := owners(New(members("", hosts...), 0, 0), ks, "")
	after := owners(New(members("", "c1", "c2", "c4"), 0, 0), ks, "")
	for _, key := range ks {
		if before[key] != after[key] && before[key] != "c3" {
			t.Fatalf("key %s moved from %s to %s though %s stayed", key, before[key], after[key], before[key])
		}
		if after[key] == "c3" {
			t.Fatalf("key %s still owned by the leaver", key)
		}
	}
}

// TestStableAcrossVersions pins a few owners: conductors of different
// builds sharing a database must agree, so changing the hash is a
// compatibility break this test makes visible.
func TestStableAcrossVersions(t *testing.T) {
	r := New(members("", "alpha", "beta", "gamma"), 0, 0)
	got := []string{}
	for _, k := range []string{"1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "node-2", "node-3", "node-4", "node-9", "node-10", "node-11", "node-12", "node-13"} {
		got = append(got, r.Owner(k, ""))
	}
	want := []string{"alpha", "gamma", "gamma", "gamma", "beta", "beta", "alpha", "gamma", "gamma"}
	if !slices.Equal(got, want) {
		t.Fatalf("owners %q, want %q", got, want)
	}
}

func BenchmarkOwner100k(b *testing.B) {
	r := New(members("", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"), 0, 0)
	ks := keys(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = r.Owner(ks[i%len(ks)], "")
	}
}

// BenchmarkOwnedPass100k is one periodic pass's filter: which of 100,000
// nodes does one of 10 conductors own.
func BenchmarkOwnedPass100k(b *testing.B) {
	r := New(members("", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"), 0, 0)
	ks := keys(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		for _, k := range ks {
			if r.Owns("c1", k, "") {
				n++
			}
		}
		if n == 0 {
			b.Fatal("c1 owns nothing")
		}
	}
}

func BenchmarkBuild100Conductors(b *testing.B) {
	ms := make([]Member, 100)
	for i := range ms {
		ms[i] = Member{Host: fmt.Sprintf("conductor-%03d", i)}
	}
	for i := 0; i < b.N; i++ {
		_ = New(ms, 0, 0)
	}
}
