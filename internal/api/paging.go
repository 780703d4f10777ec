package api

import (
	"slices"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Minor versions gating list parameters.
const (
	minorFields = 8  // ?fields=
	minorDetail = 43 // ?detail=True
)

// page holds a list request's paging and field selection.
type page struct {
	limit   int
	marker  string
	sortKey string
	sortDir string
	fields  []string // nil: not given
	detail  *bool
}

// nextParams are the query parameters a next link repeats: the sort, and
// detail and fields as the client gave them.
func (p page) nextParams() [][2]string {
	detail := ""
	if p.detail != nil {
		detail = strconv.FormatBool(*p.detail)
	}
	return p.nextQuery(detail, nil, p.fields)
}

// nextQuery is a next link's query in Ironic's order: the sort, detail as
// the kind spells it ("" leaves it out), the filters, then fields (nil
// leaves them out).
func (p page) nextQuery(detail string, filters [][2]string, fields []string) [][2]string {
	params := [][2]string{{"sort_key", p.sortKey}, {"sort_dir", p.sortDir}}
	if detail != "" {
		params = append(params, [2]string{"detail", detail})
	}
	params = append(params, filters...)
	if fields != nil {
		params = append(params, [2]string{"fields", strings.Join(fields, ",")})
	}
	return params
}

// pyDetail is ?detail= as the controllers that repeat it in Python's
// spelling ("True", "False") write it in a next link; "" when not given.
func (p page) pyDetail() string {
	if p.detail == nil {
		return ""
	}
	return pyrepr.Bool(*p.detail)
}

// listPath is the path below /v1 of a list: name, under parent when
// given ("nodes/<ident>"), with /detail for the detailed list.
func listPath(parent, name string, detail bool) string {
	if parent != "" {
		name = parent + "/" + name
	}
	if detail {
		name += "/detail"
	}
	return name
}

// shown are the fields a list writes: the requested ones, else brief for
// a plain list, nil (all) for a detailed one (the /detail path or
// ?detail=True).
func (p page) shown(brief []string, detailPath bool) []string {
	if p.fields == nil && !detailPath && (p.detail == nil || !*p.detail) {
		return brief
	}
	return p.fields
}

// param returns the first value of a query parameter.
func (rc *call) param(name string) (string, bool) {
	vals, ok := rc.query[name]
	if !ok || len(vals) == 0 {
		return "", false
	}
	return vals[0], true
}

// checkQuery refuses query parameters the endpoint does not take, with
// Ironic's "Unexpected arguments" text.
func (rc *call) checkQuery(allowed ...string) error {
	var extra []string
	for k := range rc.query {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	return invalid("Unexpected arguments: %s", strings.Join(extra, ", "))
}

// boolParam reads a boolean query parameter (nil when absent).
func (rc *call) boolParam(name string) (*bool, error) {
	raw, ok := rc.param(name)
	if !ok {
		return nil, nil
	}
	return argBool(name, raw)
}

// uuidParam reads a query parameter that must be a UUID.
func (rc *call) uuidParam(name string) (string, error) {
	raw, ok := rc.param(name)
	if !ok || raw == "" {
		return "", nil
	}
	return uuidArg(name, raw)
}

// docUUIDs is a body's uuid validator: each of keys the document has as
// a string must be a UUID, and is put in canonical form.
func docUUIDs(doc map[string]any, keys ...string) error {
	for _, k := range keys {
		if s, ok := doc[k].(string); ok {
			u, err := uuidArg(k, s)
			if err != nil {
				return err
			}
			doc[k] = u
		}
	}
	return nil
}

// uuidArg reads an identifier that must be a UUID (Ironic's args.uuid,
// argument name arg), in canonical form.
func uuidArg(arg, raw string) (string, error) {
	if !isUUIDLike(raw) {
		return "", invalid("Expected UUID for %s: %s", arg, raw)
	}
	return canonicalUUID(raw), nil
}

// fieldsParam is Ironic's args.string_list: comma separated, lower-cased,
// de-duplicated; nil when the parameter is absent.
func (rc *call) fieldsParam() []string {
	raw, ok := rc.param("fields")
	if !ok {
		return nil
	}
	out := []string{}
	for _, f := range strings.Split(raw, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// pageParams reads limit, marker, sort_key, sort_dir, fields and detail.
// Version gates of fields and detail are checked; the caller validates
// field names and sort keys against its resource.
func (rc *call) pageParams(defaultSort string) (page, error) {
	p := page{sortKey: defaultSort, sortDir: "asc", limit: rc.s.cfg.MaxPageSize}
	if raw, ok := rc.param("limit"); ok {
		n, err := argInt("limit", raw)
		if err != nil {
			return p, err
		}
		if *n <= 0 {
			return p, invalid("Limit must be positive")
		}
		if *n < int64(p.limit) {
			p.limit = int(*n)
		}
	}
	if raw, ok := rc.param("sort_key"); ok {
		p.sortKey = raw
	}
	if raw, ok := rc.param("sort_dir"); ok {
		p.sortDir = raw
	}
	p.fields = rc.fieldsParam()
	if p.fields != nil && rc.minor < minorFields {
		return p, notAcceptable()
	}
	detail, err := rc.boolParam("detail")
	if err != nil {
		return p, err
	}
	p.detail = detail
	return p, nil
}

// pagePrelude is the start of every list: the query parameters against
// allowed, the paging ones (pageParams, sorted by id by default), then the
// marker.
func (rc *call) pagePrelude(allowed ...string) (page, error) {
	if err := rc.checkQuery(allowed...); err != nil {
		return page{}, err
	}
	p, err := rc.pageParams("id")
	if err != nil {
		return p, err
	}
	return p, rc.markerParam(&p)
}

// checkPage applies Ironic's remaining list checks, in its order.
func (p *page) check(rc *call) error {
	if p.detail != nil && rc.minor < minorDetail {
		raw, _ := rc.param("detail")
		return invalid("Invalid query parameter ?detail=%s received.", raw)
	}
	if p.fields != nil && p.detail != nil && *p.detail {
		return invalid("Can not specify ?detail=True and fields in the same request.")
	}
	return p.checkSortDir()
}

// checkSortDir is Ironic's validate_sort_dir.
func (p *page) checkSortDir() error {
	if p.sortDir != "asc" && p.sortDir != "desc" {
		return invalid("Invalid sort direction: %s. Acceptable values are 'asc' or 'desc'", p.sortDir)
	}
	return nil
}

// markerParam reads ?marker=, which must be a UUID.
func (rc *call) markerParam(p *page) error {
	m, err := rc.uuidParam("marker")
	if err != nil {
		return err
	}
	p.marker = m
	return nil
}

// badSortKey is Ironic's text for a column it cannot sort on: the quoted
// form comes from the database layer, the bare one from the controller's
// list of unsortable fields.
func badSortKey(key string, quoted bool) error {
	if quoted {
		return invalid("The sort_key value \"%s\" is an invalid field for sorting", key)
	}
	return invalid("The sort_key value %s is an invalid field for sorting", key)
}

// nextLink builds the "next" URL of a full page: the list URL, the query
// parameters that shape the list, then limit and marker, as Ironic does.
func (rc *call) nextLink(resource string, params [][2]string, limit int, marker string) string {
	var b strings.Builder
	b.WriteString(rc.base)
	b.WriteString("/v1/")
	b.WriteString(resource)
	b.WriteByte('?')
	for _, kv := range params {
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(queryEscape(kv[1]))
		b.WriteByte('&')
	}
	b.WriteString("limit=")
	b.WriteString(strconv.Itoa(limit))
	b.WriteString("&marker=")
	b.WriteString(queryEscape(marker))
	return b.String()
}

// queryEscape percent-encodes only what would break a query value, so
// links read like Ironic's (fields=uuid,name).
func queryEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("&#+%=\"<>\\^`{|}", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// scan reads the page p asks for: up to its limit of the items every keep
// accepts, reading the store in batches through list (in p's sort, from a
// marker on, n items; id gives an item's marker), so pages stay full and
// markers stay valid when some filters are applied here.
func scan[T any](p page, list func(sortKey, sortDir, marker string, n int) ([]T, error), id func(T) string,
	keeps []func(T) bool) ([]T, error) {
	limit, marker, keep := p.limit, p.marker, allOf(keeps)
	batch := max(limit, 100)
	var out []T
	for {
		got, err := list(p.sortKey, p.sortDir, marker, batch)
		if err != nil {
			return nil, err
		}
		for _, it := range got {
			if keep(it) {
				out = append(out, it)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(got) < batch {
			return out, nil
		}
		marker = id(got[len(got)-1])
	}
}

// allOf accepts what every predicate accepts.
func allOf[T any](preds []func(T) bool) func(T) bool {
	return func(it T) bool {
		for _, p := range preds {
			if !p(it) {
				return false
			}
		}
		return true
	}
}

// checkFields is Ironic's check_for_invalid_fields on ?fields=: every
// name one of the resource's fields.
func checkFields(fields, known []string) error {
	var bad []string
	for _, f := range fields {
		if !slices.Contains(known, f) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return invalid("Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
	}
	return nil
}

// listPage reads and checks the query of a list of a resource not tied to
// a node (deploy templates, runbooks), in Ironic's order: the parameters
// (those of pageParams, then more), the marker, the fields and sort key
// against the resource's fields, the page checks, then the sort key
// against the resource's unsortable fields and the store's sort keys.
func (rc *call) listPage(fields, unsortable, sortKeys []string, more ...string) (page, error) {
	p, err := rc.pagePrelude(append([]string{"marker", "limit", "sort_key", "sort_dir", "fields", "detail"}, more...)...)
	if err != nil {
		return p, err
	}
	if err := checkFields(p.fields, fields); err != nil {
		return p, err
	}
	if err := checkFields([]string{p.sortKey}, fields); err != nil && p.sortKey != "id" {
		return p, err
	}
	if err := p.check(rc); err != nil {
		return p, err
	}
	return p, checkSortKey(p.sortKey, unsortable, sortKeys)
}

// uuidOrName reads a path identifier that is a UUID or a logical name
// (Ironic's args.uuid_or_name, argument name arg).
func uuidOrName(arg, raw string) (string, error) {
	if isUUIDLike(raw) {
		return canonicalUUID(raw), nil
	}
	if !isValidLogicalName(raw) {
		return "", invalid("Expected UUID or name for %s: %s", arg, raw)
	}
	return raw, nil
}
