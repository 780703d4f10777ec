package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/policy"
	"github.com/anvil-metal/anvil/internal/records"
	"github.com/anvil-metal/anvil/internal/store"
)

// A record kind on the generic record table (store.RecordStore) is one
// declaration: a Go type embedding model.RecordHead whose own fields
// carry JSON tags, and a Kind naming it. From it the server registers the
// routes (list, create, show, patch, delete below /v1/<plural>), their
// policy rules with Anvil's defaults (policy.RecordRules; an operator's
// policy file overrides them; docs/policy.md lists them), the link on
// GET /v1 from the kind's version, and its store calls; a kind needs no
// table, migration or store method. Its documents are the type's JSON:
// uuid, name, owner, created_at and updated_at first (null when empty),
// the kind's fields in the type's order, links last. A body is decoded
// strictly into the type (an unknown field or a wrong type is a 400
// naming it) and then checked by Validate. Writes go straight to the
// store (no node lock), a PATCH retrying a lost race as every record's.
//
// A production kind is declared in its own file with declare; a test
// server adds kinds through Config.Kinds.

// RecordKind is a declared record kind (Kind's instances).
type RecordKind interface {
	name() string
	minor() int
	plural() string
	register(s *Server)
}

// Kind declares the record kind whose values are *T.
type Kind[T any, P store.RecordPtr[T]] struct {
	// Name is the kind in the store, in policy rule names
	// ("baremetal:<Name>:get") and targets ("<Name>.owner"), and in
	// texts: lower-case words joined by "_" ("widget").
	Name string
	// Plural is its path below /v1, its /v1 link and its list's key.
	Plural string
	// Minor is the API version that adds it (Anvil's own kinds: any
	// version Anvil serves).
	Minor int
	// Validate checks a record built from a POST body or a PATCH, its
	// head filled; its error answers the request (invalid(...) for a 400).
	Validate func(P) error
}

// declaredKinds are the production kinds, in declaration order.
var declaredKinds []RecordKind

// declare adds k to the production kinds (a package-level var of the
// kind's file: var widgets = declare(Kind[...]{...})).
func declare(k RecordKind) RecordKind {
	declaredKinds = append(declaredKinds, k)
	return k
}

func (k Kind[T, P]) name() string   { return k.Name }
func (k Kind[T, P]) minor() int     { return k.Minor }
func (k Kind[T, P]) plural() string { return k.Plural }

// title is the kind in Ironic-style texts: "Widget", "Boot profile".
func (k Kind[T, P]) title() string { return recordTitle(k.Name) }

// recordTitle is a kind's name as the start of a text.
func recordTitle(kind string) string {
	words := strings.ReplaceAll(kind, "_", " ")
	return strings.ToUpper(words[:1]) + words[1:]
}

func (k Kind[T, P]) rule(verb string) string { return "baremetal:" + k.Name + ":" + verb }

// gone is the text below the kind's version (404 to read, 405 to write).
func (k Kind[T, P]) gone() string {
	return "The API version does not allow " + strings.ReplaceAll(k.Plural, "_", " ")
}

// kindsOf are the server's kinds: the declared ones, then cfg's.
func kindsOf(cfg Config) []RecordKind {
	return append(slices.Clone(declaredKinds), cfg.Kinds...)
}

// withKindRules is enforcer with every kind's default rules.
func withKindRules(e *policy.Enforcer, kinds []RecordKind) *policy.Enforcer {
	for _, k := range kinds {
		var err error
		if e, err = e.With(policy.RecordRules(k.name())); err != nil {
			panic(err) // the rules are code: TestRecordKindRoutes
		}
	}
	return e
}

// registerKinds registers every kind's routes, refusing two kinds of one
// name or path (or a path Ironic's API has).
func (s *Server) registerKinds(kinds []RecordKind) {
	seen := map[string]bool{}
	for _, r := range v1Resources {
		seen[r.name] = true
	}
	for _, k := range kinds {
		if seen[k.name()] || seen[k.plural()] || k.name() == "" || k.plural() == "" {
			panic(fmt.Sprintf("api: record kind %q (/v1/%s) is declared twice or clashes", k.name(), k.plural()))
		}
		seen[k.name()], seen[k.plural()] = true, true
		k.register(s)
	}
}

// recordKind is one kind on one server.
type recordKind[T any, P store.RecordPtr[T]] struct {
	Kind[T, P]
	s *Server
}

func (k Kind[T, P]) register(s *Server) {
	rk := recordKind[T, P]{k, s}
	s.handle(endpoint{"GET": {rk.list, listRule(k.rule("list"), k.rule("list_all"))},
		"POST": {rk.create, rule(k.rule("create"))}}, "/v1/"+k.Plural)
	s.handle(endpoint{"GET": {rk.show, recordRule(k.Name, rk.owner, false, k.rule("get"))},
		"PATCH":  {rk.patch, recordRule(k.Name, rk.owner, true, k.rule("update"))},
		"DELETE": {rk.remove, recordRule(k.Name, rk.owner, false, k.rule("delete"))}},
		"/v1/"+k.Plural+"/{record}")
}

func (rk recordKind[T, P]) store() store.Records[T, P] {
	return store.RecordsOf[T, P](rk.s.cfg.Catalog.Records(), rk.Name)
}

// get reads the record ident (a UUID or name) names.
func (rk recordKind[T, P]) get(ctx context.Context, ident string) (*T, error) {
	v, err := rk.store().Get(ctx, ident)
	return (*T)(v), err
}

// helper is the records helper over the kind's store: Ironic-style texts
// for a missing or duplicate record, update retried on a lost race.
func (rk recordKind[T, P]) helper() records.Kind[T] {
	st := rk.store()
	return records.Kind[T]{
		Name: rk.title(), Noun: strings.ReplaceAll(rk.Name, "_", " "), Now: rk.s.cfg.Now,
		Get:    rk.get,
		Insert: func(ctx context.Context, v *T) error { return st.Create(ctx, v) },
		Save:   func(ctx context.Context, v *T) error { return st.Update(ctx, v) },
		Remove: st.Delete,
		UUID:   func(v *T) string { return P(v).Head().UUID },
		Stamp: func(v *T, now time.Time) {
			if h := P(v).Head(); h.CreatedAt.IsZero() {
				h.CreatedAt = now
			}
		},
		Copy: func(v *T) *T {
			cp, err := rk.decode(rk.Name, rk.doc(v))
			if err != nil {
				panic(err) // a stored record always decodes again
			}
			*P(cp).Head() = *P(v).Head()
			return cp
		},
	}
}

// load reads the record the path names (the guard's load, reused by the
// handler).
func (rk recordKind[T, P]) load(rc *call) (P, error) {
	if v, ok := rc.auth.record.(P); ok && v != nil {
		return v, nil
	}
	raw := rc.r.PathValue("record")
	ident, err := uuidOrName(rk.Name+"_ident", raw)
	if err != nil {
		return nil, err
	}
	v, err := fetch(rc.ctx, rk.get, ident, raw, fault.NotFoundFor(rk.title()))
	if err != nil {
		return nil, err
	}
	rc.auth.record = P(v)
	return v, nil
}

// owner is the guard's view of the record: its owner.
func (rk recordKind[T, P]) owner(rc *call) (string, error) {
	v, err := rk.load(rc)
	if err != nil {
		return "", err
	}
	return P(v).Head().Owner, nil
}

// headKeys are the document keys of model.RecordHead, in their order.
var headKeys = []string{"uuid", "name", "owner", "created_at", "updated_at"}

// fieldNames are the keys of the kind's documents.
func (rk recordKind[T, P]) fieldNames() []string {
	return append(append(slices.Clone(headKeys), rk.ownKeys()...), "links")
}

// ownKeys are the keys of the kind's own fields, in the type's order.
func (rk recordKind[T, P]) ownKeys() []string {
	var out []string
	for _, kv := range rk.ownFields(P(new(T))) {
		out = append(out, kv.key)
	}
	return out
}

type keyValue struct {
	key   string
	value json.RawMessage
}

// ownFields are v's JSON fields after the head's, in the type's order.
func (rk recordKind[T, P]) ownFields(v P) []keyValue {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the kind's type marshals: TestRecordKindRoutes
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []keyValue
	if _, err := dec.Token(); err != nil { // {
		panic(err)
	}
	for dec.More() {
		t, _ := dec.Token()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			panic(err)
		}
		if k := t.(string); !slices.Contains(headKeys, k) {
			out = append(out, keyValue{k, raw})
		}
	}
	return out
}

// write renders v (its fields, or the wanted ones and links).
func (rk recordKind[T, P]) write(rc *call, w *jw, v P, fields []string) {
	h := v.Head()
	w.obj()
	head := []func(){
		func() { w.str(h.UUID) }, func() { w.strOrNull(h.Name) }, func() { w.strOrNull(h.Owner) },
		func() { w.timestamp(h.CreatedAt) }, func() { w.timestamp(h.UpdatedAt) },
	}
	for i, k := range headKeys {
		if wanted(fields, k) {
			w.key(k)
			head[i]()
		}
	}
	for _, kv := range rk.ownFields(v) {
		if !wanted(fields, kv.key) {
			continue
		}
		var x any
		dec := json.NewDecoder(bytes.NewReader(kv.value))
		dec.UseNumber()
		_ = dec.Decode(&x) // it was just encoded
		w.key(kv.key)
		w.any(x)
	}
	w.key("links")
	rc.links(w, rk.Plural, h.UUID)
	w.endObj()
}

func (rk recordKind[T, P]) writeOne(rc *call, w *jw, v *T, fields []string) {
	rk.write(rc, w, P(v), fields)
}

// doc is v as the document a PATCH applies to: the head's uuid, name and
// owner (null when empty) and the kind's fields.
func (rk recordKind[T, P]) doc(v *T) map[string]any {
	h := P(v).Head()
	doc := map[string]any{"uuid": h.UUID, "name": nilIfEmpty(h.Name), "owner": nilIfEmpty(h.Owner)}
	for _, kv := range rk.ownFields(P(v)) {
		var x any
		_ = json.Unmarshal(kv.value, &x) // it was just encoded
		doc[kv.key] = x
	}
	return doc
}

// decode builds a record from a document (a POST body, a patched
// document), what naming it in errors: the head's uuid, name and owner
// and the kind's own fields, strictly (Ironic's schema texts).
func (rk recordKind[T, P]) decode(what string, v any) (*T, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, schemaError(what, "%s is not of type 'object'", maskedRepr(v))
	}
	for _, k := range []string{"created_at", "updated_at", "links"} {
		if _, ok := doc[k]; ok {
			return nil, schemaError(what, "Additional properties are not allowed (%s was unexpected)", maskedRepr(k))
		}
	}
	for _, k := range []string{"name", "owner"} {
		if doc[k] == nil {
			delete(doc, k) // null is unset
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, schemaError(what, "%s", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	out := new(T)
	if err := dec.Decode(out); err != nil {
		return nil, rk.schemaText(what, doc, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, schemaError(what, "extra data after the document")
	}
	h := P(out).Head()
	if h.Name != "" && (!isValidLogicalName(h.Name) || isUUIDLike(h.Name)) {
		return nil, schemaError(what, "%s is not a valid name (letters, digits, '-', '.', '_', '~', at most 255, not a UUID)",
			maskedRepr(h.Name))
	}
	if len([]rune(h.Owner)) > 255 {
		return nil, schemaError(what, "%s is too long", maskedRepr(h.Owner))
	}
	if err := docUUIDs(doc, "uuid"); err != nil {
		return nil, err
	}
	if rk.Validate != nil {
		if err := rk.Validate(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// schemaText is encoding/json's decode error as a schema error naming
// the field and, when it is at the top, its value.
func (rk recordKind[T, P]) schemaText(what string, doc map[string]any, err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		shown := te.Field
		if v, ok := doc[te.Field]; ok {
			shown = maskedRepr(v)
		}
		return schemaError(what, "%s is not of type '%s' (field %s)", shown, goJSONType(te.Type.Kind().String()), te.Field)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return schemaError(what, "Additional properties are not allowed (%s was unexpected)", maskedRepr(f))
	}
	return schemaError(what, "%s", err)
}

// goJSONType is the JSON schema type of a Go kind's values.
func goJSONType(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"):
		return "integer"
	case strings.HasPrefix(goKind, "float"):
		return "number"
	case goKind == "bool":
		return "boolean"
	case goKind == "slice", goKind == "array":
		return "array"
	case goKind == "map", goKind == "struct":
		return "object"
	}
	return goKind
}

// GET /v1/<plural>
func (rk recordKind[T, P]) list(rc *call) error {
	if err := rc.resourceAllowed(rk.Minor, rk.gone()); err != nil {
		return err
	}
	p, err := rc.listPage(rk.fieldNames(), nil, store.RecordSortKeys, "project")
	if err != nil {
		return err
	}
	project, _ := rc.param("project")
	if err := checkMarker(rc, p.marker, rk.get, fault.NotFoundFor(rk.title())); err != nil {
		return err
	}
	fields := p.shown(namedFields, false)
	list, err := rk.store().List(rc.ctx, store.RecordQuery{Owner: project, Limit: p.limit, Marker: p.marker,
		SortKey: p.sortKey, SortDir: p.sortDir})
	if err != nil {
		return err
	}
	return writeList(rc, rk.Plural, list, p.limit, 512,
		func(w *jw, v P) { rk.write(rc, w, v, fields) },
		func(last P) string { return rc.nextLink(rk.Plural, p.nextParams(), p.limit, last.Head().UUID) })
}

// GET /v1/<plural>/{record}
func (rk recordKind[T, P]) show(rc *call) error {
	if err := rc.resourceAllowed(rk.Minor, rk.gone()); err != nil {
		return err
	}
	return show(rc, false, func(fields []string) error { return rc.checkShownFields(fields, rk.fieldNames()) },
		func() (*T, error) { v, err := rk.load(rc); return (*T)(v), err }, rk.writeOne)
}

// POST /v1/<plural>: a project-scoped principal creates records its
// project owns.
func (rk recordKind[T, P]) create(rc *call) error {
	if err := rc.resourceAllowed(rk.Minor, rk.gone()); err != nil {
		return err
	}
	body, err := rc.readCreate(false)
	if err != nil {
		return err
	}
	v, err := rk.decode(rk.Name, body)
	if err != nil {
		return err
	}
	h := P(v).Head()
	if project := rc.project(); project != "" {
		if h.Owner != "" && h.Owner != project {
			return invalid("Cannot create a %s as a project scoped admin with an owner other than your own project.",
				strings.ReplaceAll(rk.Name, "_", " "))
		}
		h.Owner = project
	}
	if err := rk.helper().Create(rc.ctx, v); err != nil {
		return err
	}
	return created(rc, v, rk.writeOne, rk.Plural, h.UUID)
}

// patchable are the head's keys a PATCH may change (uuid, created_at and
// updated_at are the store's).
var patchable = []string{"name", "owner"}

// PATCH /v1/<plural>/{record}: a change of owner needs update:owner.
func (rk recordKind[T, P]) patch(rc *call) error {
	if err := rc.resourceAllowed(rk.Minor, rk.gone()); err != nil {
		return err
	}
	_, ops, err := rc.readPatch(false, nil)
	if err != nil {
		return err
	}
	if err := checkAllowedFields(ops, append(slices.Clone(patchable), rk.ownKeys()...)); err != nil {
		return err
	}
	rules := []string{rk.rule("update")}
	if slices.ContainsFunc(ops, func(p patchOp) bool { return p.field() == "owner" }) {
		rules = append(rules, rk.rule("update:owner"))
	}
	if err := rc.authorizeRecordRules(rk.Name, rules...); err != nil {
		return err
	}
	cur, err := rk.load(rc)
	if err != nil {
		return err
	}
	return updated(rc, cur.Head().UUID, rk.helper().Update, func(v *T) error {
		doc, err := applyPatch(rc.ctx, rk.doc(v), ops)
		if err != nil {
			return err
		}
		doc["uuid"] = P(v).Head().UUID // checkAllowedFields refused /uuid
		next, err := rk.decode(rk.Name, doc)
		if err != nil {
			return err
		}
		head := *P(v).Head()
		head.Name, head.Owner = P(next).Head().Name, P(next).Head().Owner
		*v = *next
		*P(v).Head() = head
		return nil
	}, rk.writeOne)
}

// DELETE /v1/<plural>/{record}
func (rk recordKind[T, P]) remove(rc *call) error {
	if err := rc.resourceAllowed(rk.Minor, rk.gone()); err != nil {
		return err
	}
	return rc.remove(loaded(func() (*T, error) { v, err := rk.load(rc); return (*T)(v), err },
		func(v *T) string { return P(v).Head().UUID }), rk.helper().Delete)
}
