package api

// Minor versions that add resources to GET /v1 (Ironic's VERSIONED_CONTROLLERS;
// the others are their resources' own constants).
const (
	minorLookupHeartbeat = 22
	minorPortgroups      = 23
	minorVolume          = 32
	minorConductors      = 49
	minorAllocationsRoot = 52
)

// v1Resources are the controllers GET /v1 advertises, with the version that
// adds each, in Ironic's order (v1() and VERSIONED_CONTROLLERS; Ironic 21.4
// observed advertising events, deploy_templates and shards at its latest).
var v1Resources = []struct {
	name  string
	minor int
}{
	{"chassis", 1}, {"nodes", 1}, {"ports", 1}, {"drivers", 1},
	{"portgroups", minorPortgroups}, {"volume", minorVolume},
	{"lookup", minorLookupHeartbeat}, {"heartbeat", minorLookupHeartbeat},
	{"conductors", minorConductors}, {"allocations", minorAllocationsRoot},
	{"events", minorEvents}, {"deploy_templates", minorDeployTemplates}, {"shards", minorShards},
	{"runbooks", minorRunbooks}, {"inspection_rules", minorInspectionRules},
	{"continue_inspection", minorContinueInspection},
}

// GET / — version discovery.
func (s *Server) getRoot(rc *call) error {
	w := &jw{}
	w.rootObj()
	w.key("name")
	w.str("OpenStack Ironic API")
	w.key("description")
	w.str("Ironic is an OpenStack project which enables the provision and management of baremetal machines.")
	w.key("default_version")
	rc.versionObject(w)
	w.key("versions")
	w.arr()
	rc.versionObject(w)
	w.endArr()
	w.endObj()
	return rc.json(200, w)
}

// versionObject is Ironic's default_version(): the v1 API and its range.
func (rc *call) versionObject(w *jw) {
	w.obj()
	w.key("id")
	w.str("v1")
	w.key("links")
	w.arr()
	w.obj()
	w.key("href")
	w.str(rc.base + "/v1/")
	w.key("rel")
	w.str("self")
	w.endObj()
	w.endArr()
	w.key("status")
	w.str("CURRENT")
	w.key("min_version")
	w.str(minVersionString)
	w.key("version")
	w.str(maxVersionString)
	w.endObj()
}

// GET /v1 — the resources of the v1 API at the request's version.
func (s *Server) getV1(rc *call) error {
	w := &jw{}
	w.rootObj()
	w.key("id")
	w.str("v1")
	w.key("links")
	w.arr()
	w.obj()
	w.key("href")
	w.str(rc.base + "/v1/")
	w.key("rel")
	w.str("self")
	w.endObj()
	w.obj()
	w.key("href")
	w.str("https://docs.openstack.org//ironic/latest/contributor//webapi.html")
	w.key("rel")
	w.str("describedby")
	w.key("type")
	w.str("text/html")
	w.endObj()
	w.endArr()
	w.key("media_types")
	w.obj()
	w.key("base")
	w.str("application/json")
	w.key("type")
	w.str("application/vnd.openstack.ironic.v1+json")
	w.endObj()
	for _, res := range v1Resources {
		if rc.minor >= res.minor {
			w.key(res.name)
			rc.links(w, res.name, "")
		}
	}
	for _, k := range s.kinds {
		if rc.minor >= k.minor() {
			w.key(k.plural())
			rc.links(w, k.plural(), "")
		}
	}
	w.key("version")
	rc.versionObject(w)
	w.endObj()
	return rc.json(200, w)
}
