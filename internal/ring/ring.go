package ring

import (
	"crypto/md5"
	"encoding/binary"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Ironic's defaults.
const (
	DefaultPartitions = 32 // 2^hash_partition_exponent (5)
	DefaultReplicas   = 1  // hash_distribution_replicas
)

// Member is a live conductor.
type Member struct {
	Host  string
	Group string // conductor_group; "" is the default group
}

// Ring maps keys to members, one sub-ring per conductor group.
type Ring struct {
	replicas int
	groups   map[string]*circle
}

// circle is one group's ring: points sorted by hash.
type circle struct {
	hashes []uint64
	hosts  []string // hosts[i] sits at hashes[i]
	size   int      // distinct hosts
}

// New builds the ring of members, each placed at partitions points
// (DefaultPartitions if <= 0), answering up to replicas hosts per key
// (DefaultReplicas if <= 0). Duplicate members count once.
func New(members []Member, partitions, replicas int) *Ring {
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	if replicas <= 0 {
		replicas = DefaultReplicas
	}
	byGroup := map[string][]string{}
	for _, m := range members {
		g := strings.ToLower(m.Group)
		if !slices.Contains(byGroup[g], m.Host) {
			byGroup[g] = append(byGroup[g], m.Host)
		}
	}
	r := &Ring{replicas: replicas, groups: make(map[string]*circle, len(byGroup))}
	for g, hosts := range byGroup {
		type point struct {
			h    uint64
			host string
		}
		pts := make([]point, 0, len(hosts)*partitions)
		for _, host := range hosts {
			for i := 0; i < partitions; i++ {
				pts = append(pts, point{hash(host + "-" + strconv.Itoa(i)), host})
			}
		}
		// Ties (vanishingly rare) break by host name, so the order never
		// depends on the order members were given in.
		slices.SortFunc(pts, func(a, b point) int {
			if a.h != b.h {
				if a.h < b.h {
					return -1
				}
				return 1
			}
			return strings.Compare(a.host, b.host)
		})
		c := &circle{hashes: make([]uint64, len(pts)), hosts: make([]string, len(pts)), size: len(hosts)}
		for i, p := range pts {
			c.hashes[i], c.hosts[i] = p.h, p.host
		}
		r.groups[g] = c
	}
	return r
}

func hash(s string) uint64 {
	sum := md5.Sum([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// Hosts returns the hosts of key in group, owner first: up to the ring's
// replicas distinct hosts, none if the group has no members.
func (r *Ring) Hosts(key, group string) []string {
	c := r.groups[strings.ToLower(group)]
	if c == nil {
		return nil
	}
	want := min(r.replicas, c.size)
	out := make([]string, 0, want)
	start := c.index(hash(key))
	for i := 0; len(out) < want; i++ {
		h := c.hosts[(start+i)%len(c.hosts)]
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Owner returns the host that runs key's periodic work in group, or "" if
// the group has no members.
func (r *Ring) Owner(key, group string) string {
	c := r.groups[strings.ToLower(group)]
	if c == nil {
		return ""
	}
	return c.hosts[c.index(hash(key))]
}

// Owns reports whether host owns key in group.
func (r *Ring) Owns(host, key, group string) bool { return r.Owner(key, group) == host }

// index is the first point at or after h, wrapping to 0.
func (c *circle) index(h uint64) int {
	i := sort.Search(len(c.hashes), func(i int) bool { return c.hashes[i] >= h })
	if i == len(c.hashes) {
		return 0
	}
	return i
}
