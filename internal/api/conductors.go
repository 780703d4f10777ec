package api

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// conductorKeys are the keys of a conductor document, in Ironic's order.
var conductorKeys = []string{"created_at", "updated_at", "hostname", "conductor_group", "drivers", "links", "alive"}

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

func (s *Server) conductorRoutes() {
	s.handle(endpoint{"GET": s.listConductors}, "/v1/conductors")
	s.handle(endpoint{"GET": s.getConductor}, "/v1/conductors/{hostname}")
}

func conductorNotFound(host string) error {
	return fault.New(fault.NotFound, "Conductor %s could not be found.", host)
}

// alive is Ironic's test: online, with a heartbeat within the window.
func (s *Server) alive(c *model.Conductor) bool {
	return c.Alive(s.cfg.Now(), s.cfg.ConductorAliveWindow)
}

func (rc *call) conductorsAllowed() error {
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
	var bad []string
	for _, f := range fields {
		if !slices.Contains(conductorKeys, f) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return invalid("Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
	}
	return nil
}

// GET /v1/conductors
func (s *Server) listConductors(rc *call) error {
	if err := rc.conductorsAllowed(); err != nil {
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
	if p.sortKey == "alive" || p.sortKey == "drivers" {
		return badSortKey(p.sortKey, false)
	}
	less, ok := conductorSortKeys[p.sortKey]
	if !ok {
		return badSortKey(p.sortKey, true)
	}
	if err := checkConductorFields(p.fields); err != nil {
		return err
	}
	all, err := s.cfg.Store.ListConductors(rc.ctx)
	if err != nil {
		return err
	}
	list, err := conductorPage(all, p, less)
	if err != nil {
		return err
	}
	return rc.writeConductorList(list, p)
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
			return nil, conductorNotFound(p.marker)
		}
		list = list[i+1:]
	}
	if len(list) > p.limit {
		list = list[:p.limit]
	}
	return list, nil
}

func (rc *call) writeConductorList(list []*model.Conductor, p page) error {
	fields := p.fields
	full := p.detail != nil && *p.detail
	if full {
		fields = nil
	} else if fields == nil {
		fields = briefConductorFields
	}
	w := &jw{}
	w.rootObj()
	w.key("conductors")
	w.arr()
	for _, c := range list {
		rc.writeConductor(w, c, fields)
	}
	w.endArr()
	if len(list) > 0 && len(list) == p.limit {
		params := [][2]string{{"sort_key", p.sortKey}, {"sort_dir", p.sortDir}}
		if p.detail != nil {
			params = append(params, [2]string{"detail", pyrepr.Bool(*p.detail)})
		}
		if !full {
			params = append(params, [2]string{"fields", strings.Join(fields, ",")})
		}
		w.key("next")
		w.str(rc.nextLink("conductors", params, p.limit, list[len(list)-1].Hostname))
	}
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/conductors/{hostname}
func (s *Server) getConductor(rc *call) error {
	if err := rc.conductorsAllowed(); err != nil {
		return err
	}
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if err := checkConductorFields(fields); err != nil {
		return err
	}
	host := rc.r.PathValue("hostname")
	if !validHostname(host) {
		return invalid("Expected name for hostname: %s", host)
	}
	c, err := s.cfg.Store.GetConductor(rc.ctx, host)
	if errors.Is(err, store.ErrNotFound) {
		return conductorNotFound(host)
	} else if err != nil {
		return err
	}
	w := &jw{}
	rc.writeConductor(w, c, fields)
	return rc.json(200, w)
}

// writeConductor writes a conductor; fields (when given) keeps only those
// keys plus links.
func (rc *call) writeConductor(w *jw, c *model.Conductor, fields []string) {
	w.obj()
	for _, k := range conductorKeys {
		if fields != nil && k != "links" && !slices.Contains(fields, k) {
			continue
		}
		w.key(k)
		switch k {
		case "created_at":
			w.timestamp(c.CreatedAt)
		case "updated_at":
			w.timestamp(c.UpdatedAt)
		case "hostname":
			w.str(c.Hostname)
		case "conductor_group":
			w.str(c.ConductorGroup)
		case "drivers":
			w.strings(c.Drivers)
		case "links":
			rc.links(w, "conductors", c.Hostname)
		case "alive":
			w.boolean(rc.s.alive(c))
		}
	}
	w.endObj()
}
