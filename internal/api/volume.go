package api

import (
	"context"
	"errors"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// Volume connectors and targets (1.32, boot from volume): Ironic's
// VolumeConnectorsController and VolumeTargetsController. Both are listed,
// shown, created, patched and deleted under /v1/volume, and listed under
// /v1/nodes/{ident}/volume. The bodies, their checks and the documents are
// in volume_body.go; what the conductor checks (the node's lock and power
// state) is in internal/conductor/volumes.go.

// volumeKind is what differs between connectors and targets in lists,
// shows and deletes.
type volumeKind struct {
	plural     string   // "connectors", "targets": the list key and the path
	idName     string   // the path parameter in Ironic's messages
	fields     []string // document keys in Ironic's order (object_to_dict)
	brief      []string // _DEFAULT_RETURN_FIELDS of a list
	unsortable []string // the controller's invalid_sort_key_list
	sortKeys   []string // the columns Ironic's database sorts on
}

var (
	connectorKind = &volumeKind{plural: "connectors", idName: "connector_uuid",
		fields:     fieldNames(connectorFields),
		brief:      []string{"uuid", "node_uuid", "type", "connector_id"},
		unsortable: []string{"extra"},
		sortKeys:   []string{"id", "uuid", "node_id", "type", "connector_id", "created_at", "updated_at"}}
	targetKind = &volumeKind{plural: "targets", idName: "target_uuid",
		fields:     fieldNames(targetFields),
		brief:      []string{"uuid", "node_uuid", "volume_type", "boot_index", "volume_id"},
		unsortable: []string{"extra", "properties"},
		sortKeys:   []string{"id", "uuid", "node_id", "volume_type", "volume_id", "boot_index", "created_at", "updated_at"}}
)

// volumeOps binds a kind to its store reads and its document.
type volumeOps[T any] struct {
	kind     *volumeKind
	get      func(ctx context.Context, id string) (*T, error)
	list     func(ctx context.Context, q store.VolumeQuery) ([]*T, error)
	uuid     func(*T) string
	write    func(rc *call, w *jw, v *T, fields []string)
	notFound func(id string) error
}

func (hs volumeAPI) volumeRoutes() {
	s := hs.s
	conns := volumeOps[model.VolumeConnector]{kind: connectorKind, get: s.cfg.Details.Volumes().GetVolumeConnector,
		list: s.cfg.Details.Volumes().ListVolumeConnectors, uuid: func(c *model.VolumeConnector) string { return c.UUID },
		write: hs.writeConnector, notFound: fault.NotFoundFor("Volume connector")}
	targets := volumeOps[model.VolumeTarget]{kind: targetKind, get: s.cfg.Details.Volumes().GetVolumeTarget,
		list: s.cfg.Details.Volumes().ListVolumeTargets, uuid: func(t *model.VolumeTarget) string { return t.UUID },
		write: hs.writeTarget, notFound: fault.NotFoundFor("Volume target")}
	s.handle(endpoint{"GET": {hs.volumeRoot, rule("baremetal:volume:list")}}, "/v1/volume")
	s.handle(endpoint{"GET": {hs.volumeRoot, nodeRule("baremetal:volume:list")}}, "/v1/nodes/{ident}/volume")
	s.handle(endpoint{"GET": {conns.listAll, bodyRule("baremetal:volume:list")}, "POST": {hs.createConnector, bodyRule("baremetal:volume:create")}}, "/v1/volume/connectors")
	s.handle(endpoint{"GET": {conns.listAll, nodeRule("baremetal:volume:list")}}, "/v1/nodes/{ident}/volume/connectors")
	s.handle(endpoint{"GET": {targets.listAll, bodyRule("baremetal:volume:list")}, "POST": {hs.createTarget, bodyRule("baremetal:volume:create")}}, "/v1/volume/targets")
	s.handle(endpoint{"GET": {targets.listAll, nodeRule("baremetal:volume:list")}}, "/v1/nodes/{ident}/volume/targets")
	s.handle(endpoint{"GET": {conns.show, connectorRule("baremetal:volume:get")},
		"PATCH":  {hs.patchConnector, connectorRule("baremetal:volume:update")},
		"DELETE": {hs.volumeDelete(connectorKind, s.cfg.NodeRecords.DeleteVolumeConnector), connectorRule("baremetal:volume:delete")}},
		"/v1/volume/connectors/{id}")
	s.handle(endpoint{"GET": {targets.show, volTargetRule("baremetal:volume:get")},
		"PATCH":  {hs.patchTarget, volTargetRule("baremetal:volume:update")},
		"DELETE": {hs.volumeDelete(targetKind, s.cfg.NodeRecords.DeleteVolumeTarget), volTargetRule("baremetal:volume:delete")}},
		"/v1/volume/targets/{id}")
}

// volumeNode checks the version and, under a node, that the node exists;
// it returns the link path prefix ("volume" or "nodes/<ident>/volume")
// and the node (nil at /v1/volume).
func (hs volumeAPI) volumeNode(rc *call) (string, *model.Node, error) {
	if rc.minor < minorVolume {
		return "", nil, errNotFound()
	}
	if rc.r.PathValue("ident") == "" {
		return "volume", nil, nil
	}
	n, raw, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return "", nil, err
	}
	return "nodes/" + pathEscape(raw) + "/volume", n, nil
}

// GET /v1/volume and /v1/nodes/{ident}/volume: links to the collections.
func (hs volumeAPI) volumeRoot(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	prefix, _, err := hs.volumeNode(rc)
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

// id reads the connector or target UUID of the path (Ironic's args.uuid).
func (k *volumeKind) id(rc *call) (string, error) {
	return uuidArg(k.idName, rc.r.PathValue("id"))
}

// storeSortKey checks a sort key as Ironic does (the controller's list of
// unsortable fields, then the database's columns) and names its column.
// Ironic sorts node_id by the node's integer id, which Anvil has not; it
// sorts by the node's UUID, which keeps each node's records together.
func (k *volumeKind) storeSortKey(key string) (string, error) {
	if err := checkSortKey(key, k.unsortable, k.sortKeys); err != nil {
		return "", err
	}
	if key == "node_id" {
		return "node_uuid", nil
	}
	return key, nil
}

// GET /v1/volume/{connectors,targets} and /v1/nodes/{ident}/volume/...
func (o volumeOps[T]) listAll(rc *call) error {
	k := o.kind
	if err := rc.checkQuery("node", "limit", "marker", "sort_key", "sort_dir", "fields", "detail", "project"); err != nil {
		return err
	}
	nodeParam, hasNode := rc.param("node")
	if hasNode && nodeParam != "" && !isUUIDLike(nodeParam) && !isValidLogicalName(nodeParam) {
		return invalid("Expected UUID or name for node: %s", nodeParam)
	}
	p, err := rc.pageParams("id")
	if err != nil {
		return err
	}
	if err := rc.markerParam(&p); err != nil {
		return err
	}
	_, parent, err := (volumeAPI{rc.s}).volumeNode(rc)
	if err != nil {
		return err
	}
	detail := p.detail != nil && *p.detail
	if p.fields != nil && detail {
		return invalid("Can't fetch a subset of fields with 'detail' set")
	}
	if err := checkFields(p.fields, k.fields); err != nil {
		return err
	}
	if err := p.checkSortDir(); err != nil {
		return err
	}
	if err := checkMarker(rc, p.marker, o.get, o.notFound); err != nil {
		return err
	}
	q := store.VolumeQuery{Limit: p.limit, Marker: p.marker, SortDir: p.sortDir}
	if q.SortKey, err = k.storeSortKey(p.sortKey); err != nil {
		return err
	}
	var link [][2]string
	switch {
	case parent != nil:
		q.NodeUUID = parent.UUID
	case hasNode && nodeParam != "":
		n, err := rc.s.cfg.Nodes.Nodes().GetNode(rc.ctx, nodeIdentForLookup(nodeParam))
		if errors.Is(err, store.ErrNotFound) {
			return fault.NodeNotFound(nodeParam)
		} else if err != nil {
			return err
		}
		if err := rc.authorize(n, "baremetal:volume:list"); err != nil {
			return err
		}
		q.NodeUUID = n.UUID
		link = append(link, [2]string{"node", nodeParam})
	case rc.scoped() && !rc.allowed("baremetal:volume:list_all", nil):
		return fault.New(fault.Forbidden, "A project-scoped token lists the volume %s of one node: add ?node=<node>.", k.plural)
	default:
		rc.auth.pending = false
	}
	items, err := o.list(rc.ctx, q)
	if err != nil {
		return err
	}
	fields := p.shown(k.brief, false)
	// The next link has sort_key, sort_dir, detail (only when true), the
	// node and fields. Ironic's link drops ?node= (and the node of
	// /v1/nodes/{ident}/volume/...), so following it lists every node's;
	// Anvil keeps ?node= so the next page is the same list's.
	shownDetail := ""
	if detail {
		shownDetail = "True"
	}
	return writeList(rc, k.plural, items, p.limit, 384, func(w *jw, it *T) { o.write(rc, w, it, fields) },
		func(last *T) string {
			return rc.nextLink("volume/"+k.plural, p.nextQuery(shownDetail, link, fields), p.limit, o.uuid(last))
		})
}

// GET /v1/volume/{connectors,targets}/{id}
func (o volumeOps[T]) show(rc *call) error {
	if rc.minor < minorVolume {
		return errNotFound()
	}
	return show(rc, false, func(fields []string) error { return rc.checkShownFields(fields, o.kind.fields) },
		func() (*T, error) {
			id, err := o.kind.id(rc)
			if err != nil {
				return nil, err
			}
			return fetch(rc.ctx, o.get, id, id, o.notFound)
		}, o.write)
}

// DELETE /v1/volume/{connectors,targets}/{id}
func (hs volumeAPI) volumeDelete(k *volumeKind, del func(ctx context.Context, id string) error) func(*call) error {
	return func(rc *call) error {
		if rc.minor < minorVolume {
			return errNotFound()
		}
		return rc.remove(func() (string, error) { return k.id(rc) }, del)
	}
}
