package fake

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/anvil-metal/anvil/internal/driver"
)

// fakeVendorMethods are the methods of Ironic's "fake" vendor interface
// (FakeVendorB): each answers whether its argument bar has the value it
// tests for; second_method and fourth_method_shared_lock run in a worker,
// fourth without the node's lock.
var fakeVendorMethods = map[string]struct {
	want string
	meta driver.VendorMethod
}{
	"second_method": {"kazoo", driver.VendorMethod{HTTPMethods: []string{"POST"}, Async: true,
		Description: "Test if the value of bar is kazoo", RequireExclusiveLock: ptr(true)}},
	"third_method_sync": {"meow", driver.VendorMethod{HTTPMethods: []string{"POST"},
		Description: "Test if the value of bar is meow", RequireExclusiveLock: ptr(true)}},
	"fourth_method_shared_lock": {"woof", driver.VendorMethod{HTTPMethods: []string{"POST"}, Async: true,
		Description: "Test if the value of bar is woof", RequireExclusiveLock: ptr(false)}},
}

func ptr[T any](v T) *T { return &v }

var _ driver.Vendor = (*Hardware)(nil)

// VendorMethods lists the fake vendor methods.
func (h *Hardware) VendorMethods() map[string]driver.VendorMethod {
	out := make(map[string]driver.VendorMethod, len(fakeVendorMethods))
	for name, m := range fakeVendorMethods {
		out[name] = m.meta
	}
	return out
}

// ValidateVendor requires a non-empty bar, as FakeVendorB.validate, and
// refuses other arguments (Python would fail the call on them).
func (h *Hardware) ValidateVendor(_ context.Context, _ *driver.Task, method string, args map[string]any) error {
	if _, ok := fakeVendorMethods[method]; !ok {
		return &driver.ArgError{Msg: fmt.Sprintf("No handler for method %s", method)}
	}
	if bar, ok := args["bar"]; !ok || bar == nil || bar == "" || bar == false {
		return &driver.ArgError{Msg: fmt.Sprintf("Parameter 'bar' not passed to method '%s'.", method)}
	}
	var extra []string
	for k := range args {
		if k != "bar" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return &driver.ArgError{Msg: fmt.Sprintf("%s() got an unexpected keyword argument '%s'", method, extra[0])}
	}
	return nil
}

// CallVendor answers whether bar is the value the method tests for.
func (h *Hardware) CallVendor(_ context.Context, _ *driver.Task, method, httpMethod string, args map[string]any) (any, error) {
	m, ok := fakeVendorMethods[method]
	if !ok || !slices.Contains(m.meta.HTTPMethods, httpMethod) {
		return nil, &driver.ArgError{Msg: fmt.Sprintf("No handler for method %s", method)}
	}
	return args["bar"] == m.want, nil
}
