package api

import (
	"context"
	"errors"
	"slices"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// The handler steps every record kind shares (chassis, ports, portgroups,
// allocations, deploy templates, runbooks, inspection rules, volume
// connectors and targets, conductors, and a node's sub-resources): what
// differs between kinds is passed in, the order of the steps is each
// caller's (it is Ironic's controller's, which differ). Paging itself is
// paging.go's; the version gates are version.go's.

// fetch reads the record ident names through get; one the store lacks is
// notFound(shown), shown being the identifier as Ironic's message names it.
func fetch[T any](ctx context.Context, get func(context.Context, string) (*T, error), ident, shown string,
	notFound func(string) error) (*T, error) {
	v, err := get(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound(shown)
	}
	return v, err
}

// checkMarker is a list's check that ?marker= names an existing record
// (no marker passes).
func checkMarker[T any](rc *call, marker string, get func(context.Context, string) (*T, error),
	notFound func(string) error) error {
	if marker == "" {
		return nil
	}
	_, err := fetch(rc.ctx, get, marker, marker, notFound)
	return err
}

// checkSortKey is Ironic's check of a sort key: the controller's list of
// unsortable fields, then the database's sort columns.
func checkSortKey(key string, unsortable, sortKeys []string) error {
	if slices.Contains(unsortable, key) {
		return badSortKey(key, false)
	}
	if !slices.Contains(sortKeys, key) {
		return badSortKey(key, true)
	}
	return nil
}

// checkShownFields is the check of ?fields= on a show or list of a kind
// whose keys are known: the version that added fields, then the names.
func (rc *call) checkShownFields(fields, known []string) error {
	if fields != nil && rc.minor < minorFields {
		return notAcceptable()
	}
	return checkFields(fields, known)
}

// show answers a GET of one record: ?fields= is its only parameter,
// check validates it before load (fieldsFirst) or after, as the kind's
// Ironic controller does, and write renders the record.
func show[T any](rc *call, fieldsFirst bool, check func(fields []string) error, load func() (*T, error),
	write func(*call, *jw, *T, []string)) error {
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if fieldsFirst {
		if err := check(fields); err != nil {
			return err
		}
	}
	v, err := load()
	if err != nil {
		return err
	}
	if !fieldsFirst {
		if err := check(fields); err != nil {
			return err
		}
	}
	w := &jw{}
	write(rc, w, v, fields)
	return rc.json(200, w)
}

// respond writes a whole record as the body of a status answer (a show,
// a patch).
func respond[T any](rc *call, status int, v *T, write func(*call, *jw, *T, []string)) error {
	w := &jw{}
	write(rc, w, v, nil)
	return rc.json(status, w)
}

// created answers a POST: 201 with the new record and its Location
// (the record's path below /v1).
func created[T any](rc *call, v *T, write func(*call, *jw, *T, []string), path ...string) error {
	rc.w.Header().Set("Location", rc.link(false, path...))
	return respond(rc, 201, v, write)
}

// updated answers a PATCH: update applies apply to the stored record id
// (the conductor retries it on a stale version), then 200 with the result.
func updated[T any](rc *call, id string, update func(context.Context, string, func(*T) error) (*T, error),
	apply func(*T) error, write func(*call, *jw, *T, []string)) error {
	v, err := update(rc.ctx, id, apply)
	if err != nil {
		return err
	}
	return respond(rc, 200, v, write)
}

// remove answers a DELETE: no query parameters, then the record id
// names (an error of id answers) goes through del; 204.
func (rc *call) remove(id func() (string, error), del func(context.Context, string) error) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	ident, err := id()
	if err != nil {
		return err
	}
	if err := del(rc.ctx, ident); err != nil {
		return err
	}
	return rc.noContent()
}

// loaded is id for remove of a record read first (so an unknown one is
// the API's 404, as Ironic's controllers that fetch it first): load's
// record, named by its UUID.
func loaded[T any](load func() (*T, error), uuid func(*T) string) func() (string, error) {
	return func() (string, error) {
		v, err := load()
		if err != nil {
			return "", err
		}
		return uuid(v), nil
	}
}

// readPatch reads a PATCH request: no query parameters, the record's id
// when id is given (the kinds whose path Ironic checks before the body),
// then the body against the patch schema; emptyObject reads a missing
// body as {} (the controllers whose body Ironic defaults so), else null.
func (rc *call) readPatch(emptyObject bool, id func() (string, error)) (string, []patchOp, error) {
	if err := rc.checkQuery(); err != nil {
		return "", nil, err
	}
	var ident string
	if id != nil {
		var err error
		if ident, err = id(); err != nil {
			return "", nil, err
		}
	}
	v, err := rc.readBody(emptyObject)
	if err != nil {
		return "", nil, err
	}
	ops, err := parsePatch(v, rc.minor)
	return ident, ops, err
}

// readCreate reads a POST request: no query parameters, then the body;
// emptyObject as readPatch's.
func (rc *call) readCreate(emptyObject bool) (any, error) {
	if err := rc.checkQuery(); err != nil {
		return nil, err
	}
	return rc.readBody(emptyObject)
}

func (rc *call) readBody(emptyObject bool) (any, error) {
	v, err := rc.decodeBody(rc.s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	if v == nil && emptyObject {
		v = map[string]any{}
	}
	return v, nil
}

// writeList renders a page of a list, {key: [...], "next": ...}: each
// item by write, and the link to the next page, next of the last item,
// when the page is full (a limit of 0: the list is not paged, next may
// be nil). hint is an item's expected size in bytes.
func writeList[T any](rc *call, key string, items []T, limit, hint int, write func(*jw, T),
	next func(last T) string) error {
	w := rc.s.listWriter(256 + len(items)*hint)
	w.rootObj()
	w.key(key)
	w.arr()
	for _, it := range items {
		write(w, it)
	}
	w.endArr()
	if len(items) > 0 && len(items) == limit {
		w.key("next")
		w.str(next(items[len(items)-1]))
	}
	w.endObj()
	return rc.json(200, w)
}

// nodeSub is the start of a request of a node's sub-resource added at
// 1.minor: 404 below it, the query against allowed, then the node of the
// path and its identifier as given.
func (rc *call) nodeSub(minor int, allowed ...string) (*model.Node, string, error) {
	if err := rc.subAllowed(minor, allowed...); err != nil {
		return nil, "", err
	}
	return (nodeAPI{rc.s}).loadNode(rc)
}

// subAllowed is nodeSub's gate and query check.
func (rc *call) subAllowed(minor int, allowed ...string) error {
	if rc.minor < minor {
		return errNotFound()
	}
	return rc.checkQuery(allowed...)
}

// docField is one key of a record's document: its name, the version that
// shows it, and how its value is written.
type docField[T any] struct {
	name  string
	minor int
	write func(w *jw, rc *call, v *T)
}

// writeDoc writes v with the keys of table visible at the request
// version that fields wants, in the table's order.
func writeDoc[T any](w *jw, rc *call, v *T, table []docField[T], fields []string) {
	w.obj()
	for i := range table {
		f := &table[i]
		if f.minor > rc.minor || !wanted(fields, f.name) {
			continue
		}
		w.key(f.name)
		f.write(w, rc, v)
	}
	w.endObj()
}

// fieldNames are the keys of a document table.
func fieldNames[T any](table []docField[T]) []string {
	out := make([]string, len(table))
	for i, f := range table {
		out[i] = f.name
	}
	return out
}

// wanted says whether a document key is written: every key when fields is
// nil, else the listed ones and links (Ironic's sanitize_dict).
func wanted(fields []string, key string) bool {
	return fields == nil || key == "links" || slices.Contains(fields, key)
}
