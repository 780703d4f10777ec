package api

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// conductorFields are the keys of a conductor document, in Ironic's order.
var conductorFields = []docField[model.Conductor]{
	{"created_at", 1, func(w *jw, _ *call, c *model.Conductor) { w.timestamp(c.CreatedAt) }},
	{"updated_at", 1, func(w *jw, _ *call, c *model.Conductor) { w.timestamp(c.UpdatedAt) }},
	{"hostname", 1, func(w *jw, _ *call, c *model.Conductor) { w.str(c.Hostname) }},
	{"conductor_group", 1, func(w *jw, _ *call, c *model.Conductor) { w.str(c.ConductorGroup) }},
	{"drivers", 1, func(w *jw, _ *call, c *model.Conductor) { w.strings(c.Drivers) }},
	{"links", 1, func(w *jw, rc *call, c *model.Conductor) { rc.links(w, "conductors", c.Hostname) }},
	{"alive", 1, func(w *jw, rc *call, c *model.Conductor) { w.boolean((recordAPI{rc.s}).alive(c)) }},
}

// briefConductorFields are the keys of a conductor in a plain list.
var briefConductorFields = []string{"hostname", "conductor_group", "alive"}

// conductorSortKeys are the columns conductors can be sorted on ("id" is
// registration order).
var conductorSortKeys = map[string]func(a, b *model.Conductor) int{
	"id":              func(a, b *model.Conductor) int { return 0 },
	"hostname":        func(a, b *model.Conductor) int { return cmp.Compare(a.Hostname, b.Hostname) },
	"conductor_group": func(a, b *model.Conductor) int { return cmp.Compare(a.ConductorGroup, b.ConductorGroup) },
	"created_at":      func(a, b *model.Conductor) int { return a.CreatedAt.Compare(b.CreatedAt) },
	"updated_at":      func(a, b *model.Conductor) int { return a.UpdatedAt.Compare(b.UpdatedAt) },
	"online":          func(a, b *model.Conductor) int { return cmp.Compare(boolInt(a.Online), boolInt(b.Online)) },
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (hs recordAPI) conductorRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listConductors, rule("baremetal:conductor:get")}}, "/v1/conductors")
	s.handle(endpoint{"GET": {hs.getConductor, rule("baremetal:conductor:get")}}, "/v1/conductors/{hostname}")
}

// alive is Ironic's test: online, with a heartbeat within the window.
func (hs recordAPI) alive(c *model.Conductor) bool {
	s := hs.s
	return c.Alive(s.cfg.Now(), s.cfg.ConductorAliveWindow)
}

func (hs recordAPI) conductorsAllowed(rc *call) error {
	if rc.minor < minorConductors {
		return errNotFound()
	}
	return nil
}

// validHostname accepts logical names and host:port forms.
func validHostname(h string) bool {
	return h != "" && isValidLogicalName(strings.NewReplacer(":", "", "[", "", "]", "").Replace(h)+"x")
}

// checkConductorFields validates ?fields= for conductors.
func checkConductorFields(fields []string) error {
	return checkFields(fields, fieldNames(conductorFields))
}

// GET /v1/conductors
func (hs recordAPI) listConductors(rc *call) error {
	s := hs.s
	if err := hs.conductorsAllowed(rc); err != nil {
		return err
	}
	if err := rc.checkQuery("marker", "limit", "sort_key", "sort_dir", "fields", "detail"); err != nil {
		return err
	}
	p, err := rc.pageParams("id")
	if err != nil {
		return err
	}
	p.marker, _ = rc.param("marker")
	if err := p.check(rc); err != nil {
		return err
	}
	if err := checkSortKey(p.sortKey, []string{"alive", "drivers"}, slices.Collect(maps.Keys(conductorSortKeys))); err != nil {
		return err
	}
	less := conductorSortKeys[p.sortKey]
	if err := checkConductorFields(p.fields); err != nil {
		return err
	}
	all, err := s.cfg.Catalog.Conductors().ListConductors(rc.ctx)
	if err != nil {
		return err
	}
	list, err := conductorPage(all, p, less)
	if err != nil {
		return err
	}
	return hs.writeConductorList(rc, list, p)
}

// conductorPage sorts the conductors and cuts the page after the marker.
func conductorPage(all []*model.Conductor, p page, less func(a, b *model.Conductor) int) ([]*model.Conductor, error) {
	list := slices.Clone(all)
	slices.SortStableFunc(list, func(a, b *model.Conductor) int {
		if p.sortDir == "desc" {
			return -less(a, b)
		}
		return less(a, b)
	})
	if p.sortDir == "desc" && p.sortKey == "id" {
		slices.Reverse(list)
	}
	if p.marker != "" {
		i := slices.IndexFunc(list, func(c *model.Conductor) bool { return c.Hostname == p.marker })
		if i < 0 {
			return nil, fault.Missing("Conductor", p.marker)
		}
		list = list[i+1:]
	}
	if len(list) > p.limit {
		list = list[:p.limit]
	}
	return list, nil
}

// writeConductorList renders {"conductors": [...], "next": ...} (the next
// link repeats the fields written, and detail as given).
func (hs recordAPI) writeConductorList(rc *call, list []*model.Conductor, p page) error {
	fields := p.shown(briefConductorFields, false)
	return writeList(rc, "conductors", list, p.limit, 256, func(w *jw, c *model.Conductor) { hs.writeConductor(rc, w, c, fields) },
		func(last *model.Conductor) string {
			return rc.nextLink("conductors", p.nextQuery(p.pyDetail(), nil, fields), p.limit, last.Hostname)
		})
}

// GET /v1/conductors/{hostname}
func (hs recordAPI) getConductor(rc *call) error {
	s := hs.s
	if err := hs.conductorsAllowed(rc); err != nil {
		return err
	}
	return show(rc, true, checkConductorFields, func() (*model.Conductor, error) {
		host := rc.r.PathValue("hostname")
		if !validHostname(host) {
			return nil, invalid("Expected name for hostname: %s", host)
		}
		return fetch(rc.ctx, s.cfg.Catalog.Conductors().GetConductor, host, host, fault.NotFoundFor("Conductor"))
	}, hs.writeConductor)
}

// writeConductor writes a conductor; fields (when given) keeps only those
// keys plus links.
func (hs recordAPI) writeConductor(rc *call, w *jw, c *model.Conductor, fields []string) {
	writeDoc(w, rc, c, conductorFields, fields)
}
