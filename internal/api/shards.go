package api

import (
	"cmp"
	"slices"

	"github.com/anvil-metal/anvil/internal/store"
)

// Minor versions of shards and child nodes.
const (
	minorShards   = 82
	minorChildren = 83
)

func (hs fleetAPI) shardRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listShards, rule("baremetal:shards:get")}}, "/v1/shards")
	s.handle(endpoint{"GET": {hs.listChildren, nodeRule("baremetal:node:get")}}, "/v1/nodes/{ident}/children")
}

// GET /v1/shards (1.82): nodes counted by shard, largest first, unsharded
// nodes under the name "None" (Ironic's get_shard_list).
func (hs fleetAPI) listShards(rc *call) error {
	s := hs.s
	if rc.minor < minorShards {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	nodes, err := s.cfg.Nodes.Nodes().ListNodes(rc.ctx, store.NodeQuery{})
	if err != nil {
		return err
	}
	counts := map[string]int64{}
	for _, n := range nodes {
		counts[cmp.Or(n.Shard, "None")]++
	}
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	w := &jw{}
	w.rootObj()
	w.key("shards")
	w.arr()
	for _, name := range names {
		w.obj()
		w.key("name")
		w.str(name)
		w.key("count")
		w.integer(counts[name])
		w.endObj()
	}
	w.endArr()
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/nodes/{ident}/children (1.83): the UUIDs of the nodes whose
// parent_node is this node, with a link to that node list.
func (hs fleetAPI) listChildren(rc *call) error {
	s := hs.s
	if rc.minor < minorChildren {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	parent, _, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return err
	}
	nodes, err := s.cfg.Nodes.Nodes().ListNodes(rc.ctx, store.NodeQuery{})
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("children")
	w.arr()
	for _, n := range nodes {
		if n.ParentNode == parent.UUID || parent.Name != "" && n.ParentNode == parent.Name {
			w.str(n.UUID)
		}
	}
	w.endArr()
	w.key("links")
	w.obj()
	w.key("href")
	w.str(rc.link(false, "nodes") + "?parent_node=" + parent.UUID)
	w.key("rel")
	w.str("children")
	w.endObj()
	w.endObj()
	return rc.json(200, w)
}
