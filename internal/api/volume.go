package api

import (
	"github.com/anvil-metal/anvil/internal/fault"
)

// Volume connectors and targets (1.32): Anvil's only storage interface is
// noop and it keeps no connectors or targets, so the links GET /v1 and node
// documents carry lead to empty collections and every connector or target
// is unknown. Creating one is not offered (it needs its own table).
func (s *Server) volumeRoutes() {
	s.handle(endpoint{"GET": s.volumeRoot}, "/v1/volume", "/v1/nodes/{ident}/volume")
	s.handle(endpoint{"GET": s.volumeList("connectors")}, "/v1/volume/connectors", "/v1/nodes/{ident}/volume/connectors")
	s.handle(endpoint{"GET": s.volumeList("targets")}, "/v1/volume/targets", "/v1/nodes/{ident}/volume/targets")
	s.handle(endpoint{"GET": volumeMissing("Volume connector %s could not be found.")}, "/v1/volume/connectors/{id}")
	s.handle(endpoint{"GET": volumeMissing("Volume target %s could not be found.")}, "/v1/volume/targets/{id}")
}

// volumeNode checks the version and, under a node, that the node exists;
// it returns the link path prefix ("volume" or "nodes/<ident>/volume").
func (rc *call) volumeNode() (string, error) {
	if rc.minor < minorVolume {
		return "", errNotFound()
	}
	if rc.r.PathValue("ident") == "" {
		return "volume", nil
	}
	_, raw, err := rc.loadNode()
	if err != nil {
		return "", err
	}
	return "nodes/" + pathEscape(raw) + "/volume", nil
}

// GET /v1/volume and /v1/nodes/{ident}/volume: links to the collections.
func (s *Server) volumeRoot(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	prefix, err := rc.volumeNode()
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("links")
	rc.links(w, prefix, "")
	w.key("connectors")
	rc.links(w, prefix, "connectors")
	w.key("targets")
	rc.links(w, prefix, "targets")
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/volume/{connectors,targets} (and under a node): always empty.
func (s *Server) volumeList(kind string) func(*call) error {
	return func(rc *call) error {
		if err := rc.checkQuery("node", "limit", "marker", "sort_key", "sort_dir", "fields", "detail", "project"); err != nil {
			return err
		}
		if _, err := rc.volumeNode(); err != nil {
			return err
		}
		w := &jw{}
		w.rootObj()
		w.key(kind)
		w.arr()
		w.endArr()
		w.endObj()
		return rc.json(200, w)
	}
}

func volumeMissing(format string) func(*call) error {
	return func(rc *call) error {
		if rc.minor < minorVolume {
			return errNotFound()
		}
		return fault.New(fault.NotFound, format, rc.r.PathValue("id"))
	}
}
