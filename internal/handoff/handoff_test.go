package handoff_test

import (
	"reflect"
	"testing"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/handoff"
)

// TestEveryVerbWritten: the API-only process's conductor embeds nothing,
// so each method of the API's Lifecycle and Agents is one handoff writes
// (routed to the owner or run locally on purpose), never one promoted from
// an embedded local conductor that would run a new verb locally unnoticed.
func TestEveryVerbWritten(t *testing.T) {
	typ := reflect.TypeOf(handoff.Conductor{})
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Anonymous {
			t.Errorf("handoff.Conductor embeds %s: its methods would answer the API unrouted", f.Type)
		}
	}
	ptr := reflect.TypeOf((*handoff.Conductor)(nil))
	for _, iface := range []reflect.Type{reflect.TypeFor[api.Lifecycle](), reflect.TypeFor[api.Agents]()} {
		for i := range iface.NumMethod() {
			if _, ok := ptr.MethodByName(iface.Method(i).Name); !ok {
				t.Errorf("handoff.Conductor lacks %s.%s", iface.Name(), iface.Method(i).Name)
			}
		}
	}
}
