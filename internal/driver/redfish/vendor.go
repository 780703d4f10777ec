package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Vendor is the redfish vendor interface (Ironic's RedfishVendorPassthru):
// BMC event subscriptions on the Redfish EventService (create_subscription,
// delete_subscription, get_all_subscriptions, get_subscription; what
// Metal3's BMCEventSubscription uses) and eject_vmedia.
type Vendor struct{ d *Driver }

// NewVendor returns the vendor interface sharing d's connections.
func (d *Driver) NewVendor() *Vendor { return &Vendor{d: d} }

var _ driver.Vendor = (*Vendor)(nil)

func yes() *bool { b := true; return &b }

// vendorMethods are Ironic's, with its descriptions; all but eject_vmedia
// run while the caller waits.
var vendorMethods = map[string]driver.VendorMethod{
	"create_subscription": {HTTPMethods: []string{"POST"}, RequireExclusiveLock: yes(),
		Description: "Creates a subscription on a node. Required argument: a dictionary of {'Destination': 'destination_url'}"},
	"delete_subscription": {HTTPMethods: []string{"DELETE"}, RequireExclusiveLock: yes(),
		Description: "Delete a subscription on a node. Required argument: a dictionary of {'id': 'subscription_bmc_id'}"},
	"get_all_subscriptions": {HTTPMethods: []string{"GET"}, RequireExclusiveLock: yes(),
		Description: "Returns all subscriptions on the node."},
	"get_subscription": {HTTPMethods: []string{"GET"}, RequireExclusiveLock: yes(),
		Description: "Get a subscription on the node. Required argument: a dictionary of {'id': 'subscription_bmc_id'}"},
	"eject_vmedia": {HTTPMethods: []string{"POST"}, Async: true, RequireExclusiveLock: yes(),
		Description: "Eject a virtual media device. If no device is provided then all attached devices will be ejected. " +
			"Optional arguments: 'boot_device' - the boot device to eject, either 'cd', 'dvd', 'usb', or 'floppy'"},
}

// subscriptionFields are the fields of a subscription Ironic answers.
var subscriptionFields = []string{"Id", "Context", "Protocol", "Destination", "EventTypes"}

// allEventTypes are sushy's EventType values: what a BMC that lists no
// EventTypesForSubscription is taken to accept.
var allEventTypes = []string{"Alert", "MetricReport", "Other", "ResourceAdded", "ResourceRemoved", "ResourceUpdated", "StatusChange"}

// Validate checks driver_info without contacting the BMC.
func (v *Vendor) Validate(t *driver.Task) error { return v.d.Validate(t) }

// VendorMethods lists the methods.
func (v *Vendor) VendorMethods() map[string]driver.VendorMethod { return vendorMethods }

func argErr(format string, args ...any) error {
	return &driver.ArgError{Msg: fmt.Sprintf(format, args...)}
}

// callErr is Ironic's RedfishError text around msg.
func callErr(err error, notFound bool, format string, args ...any) error {
	return &driver.CallError{Msg: "Redfish exception occurred. Error: " + fmt.Sprintf(format, args...), NotFound: notFound, Err: err}
}

// ValidateVendor checks a method's arguments as Ironic's validate does.
func (v *Vendor) ValidateVendor(ctx context.Context, t *driver.Task, method string, args map[string]any) error {
	switch method {
	case "create_subscription":
		return v.validateCreate(ctx, t.Node, args)
	case "delete_subscription":
		id, ok := args["id"]
		if !ok || id == nil || id == "" {
			return argErr("id can't be None")
		}
		if s, isStr := id.(string); !isStr || !validSubscriptionID(s) {
			return argErr("Invalid BMC subscription ID value: '%s'", pyrepr.Str(id))
		}
	case "eject_vmedia":
		return v.validateEject(ctx, t.Node, args)
	}
	return nil
}

// illegalIDChars are the characters Ironic refuses in a subscription id
// (RFC 1738's unsafe and reserved-looking ones, ironic/common/validate.py).
const illegalIDChars = "!*'(),{}|\\^~[]`<>#%\""

// validSubscriptionID is Ironic's is_bmc_subscription_id_valid: no illegal
// character and no ".." (a path traversal).
func validSubscriptionID(id string) bool {
	return !strings.ContainsAny(id, illegalIDChars) && !strings.Contains(id, "..")
}

func (v *Vendor) validateCreate(ctx context.Context, n *model.Node, args map[string]any) error {
	if et, ok := args["EventTypes"]; ok && et != nil {
		_, svc, err := v.eventService(ctx, n)
		if err != nil {
			return err
		}
		allowed := svc.EventTypesForSubscription
		if len(allowed) == 0 {
			allowed = allEventTypes
		}
		if !stringsWithin(et, allowed) {
			return argErr("EventTypes %s is not a valid value, allowed values %s", pyrepr.Str(et), pySet(allowed))
		}
	}
	if c, ok := args["Context"]; ok {
		if _, isStr := c.(string); !isStr {
			return argErr("Context %s is not a valid string", pyrepr.Str(c))
		}
	}
	if p, ok := args["Protocol"]; ok {
		if _, isStr := p.(string); !isStr {
			return argErr("Protocol %s is not a string", pyrepr.Str(p))
		}
	}
	if h, ok := args["HttpHeaders"]; ok && h != nil {
		if _, isList := h.([]any); !isList {
			return argErr("HttpHeaders %s is not a list of headers", "******")
		}
	}
	dest := args["Destination"]
	if s, isStr := dest.(string); !isStr || !validDestination(s) {
		return argErr("Destination %s is not a valid URI", pyrepr.Str(dest))
	}
	return nil
}

// validDestination is Ironic's rfc3986 check: a valid URI with a scheme
// and a host.
func validDestination(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != "" && u.Hostname() != "" && !strings.ContainsAny(s, " \t\r\n")
}

// stringsWithin reports whether v is a list of strings all in allowed.
func stringsWithin(v any, allowed []string) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range list {
		s, isStr := e.(string)
		if !isStr || !slices.Contains(allowed, s) {
			return false
		}
	}
	return true
}

// pySet renders names as a Python set of str, sorted: {'Alert', 'Other'}.
func pySet(names []string) string {
	s := slices.Clone(names)
	sort.Strings(s)
	r := pyrepr.Strings(s)
	return "{" + r[1:len(r)-1] + "}"
}

// vmediaBootDevices maps eject_vmedia's boot_device (sushy's media type
// names) to the Redfish MediaTypes it names.
var vmediaBootDevices = map[string]string{"cd": "CD", "dvd": "DVD", "floppy": "Floppy", "usb": "USBStick"}

func (v *Vendor) validateEject(ctx context.Context, n *model.Node, args map[string]any) error {
	bd, ok := args["boot_device"]
	if !ok || bd == nil || bd == "" {
		return nil
	}
	s, _ := bd.(string)
	mt, known := vmediaBootDevices[s]
	if !known {
		return argErr("Boot device %s is not a valid value ", pyrepr.Str(bd))
	}
	c, sysPath, err := v.d.target(ctx, n)
	if err != nil {
		return callErr(err, false, "%v", err)
	}
	devs, err := vmDevices(c, sysPath)
	if err != nil {
		return callErr(err, false, "%v", err)
	}
	for _, dev := range devs {
		if slices.Contains(dev.MediaTypes, mt) {
			return nil
		}
	}
	return argErr("Boot device %s is not a valid value ", s)
}

// eventSvc is the part of the EventService the vendor methods read.
type eventSvc struct {
	Subscriptions             link     `json:"Subscriptions"`
	EventTypesForSubscription []string `json:"EventTypesForSubscription"`
}

// eventService finds the BMC's EventService and its Subscriptions
// collection (Ironic: RedfishError when either is missing).
func (v *Vendor) eventService(ctx context.Context, n *model.Node) (*conn, eventSvc, error) {
	in, err := parseInfo(n)
	if err != nil {
		return nil, eventSvc{}, &driver.ArgError{Msg: err.Error()}
	}
	c, err := v.d.conn(ctx, in)
	if err != nil {
		return nil, eventSvc{}, callErr(err, false, "%v", err)
	}
	var root struct {
		EventService link `json:"EventService"`
	}
	if err := c.getJSON("/redfish/v1/", &root); err != nil {
		return nil, eventSvc{}, callErr(err, false, "%v", err)
	}
	if root.EventService.ID == "" {
		return nil, eventSvc{}, callErr(nil, false, "The attribute EventService is missing from the resource /redfish/v1/")
	}
	var svc eventSvc
	if err := c.getJSON(root.EventService.ID, &svc); err != nil {
		return nil, eventSvc{}, callErr(err, false, "%v", err)
	}
	if svc.Subscriptions.ID == "" {
		return nil, eventSvc{}, callErr(nil, false, "The attribute Subscriptions is missing from the resource %s", root.EventService.ID)
	}
	return c, svc, nil
}

// member is the path of subscription id in the collection at col (some
// BMCs leave the trailing slash off, some do not).
func member(col, id string) string {
	return strings.TrimSuffix(col, "/") + "/" + id
}

// CallVendor runs a method against the BMC.
func (v *Vendor) CallVendor(ctx context.Context, t *driver.Task, method, _ string, args map[string]any) (any, error) {
	n := t.Node
	switch method {
	case "create_subscription":
		return v.create(ctx, n, args)
	case "delete_subscription":
		id, _ := args["id"].(string)
		c, svc, err := v.eventService(ctx, n)
		if err == nil {
			_, err = c.Delete(member(svc.Subscriptions.ID, id)) // closes the body
		}
		if err != nil {
			return nil, callErr(err, true, "Redfish delete_subscription failed for subscription %s on node %s. Error: %s", id, n.UUID, errText(err))
		}
		return nil, nil
	case "get_all_subscriptions":
		c, svc, err := v.eventService(ctx, n)
		var out map[string]any
		if err == nil {
			err = c.getJSON(svc.Subscriptions.ID, &out)
		}
		if err != nil {
			return nil, callErr(err, false, "Redfish get_subscriptions failed for node %s. Error: %s", n.UUID, errText(err))
		}
		return out, nil
	case "get_subscription":
		id, isStr := args["id"].(string)
		if !isStr || !validSubscriptionID(id) {
			return nil, argErr("Invalid BMC ID value: '%s'", pyrepr.Str(args["id"]))
		}
		c, svc, err := v.eventService(ctx, n)
		var out map[string]any
		if err == nil {
			err = c.getJSON(member(svc.Subscriptions.ID, id), &out)
		}
		if err != nil {
			return nil, callErr(err, false, "Redfish get_subscription failed for subscription %s on node %s. Error: %s", id, n.UUID, errText(err))
		}
		return filterSubscription(out), nil
	case "eject_vmedia":
		var types []string
		if s, _ := args["boot_device"].(string); s != "" {
			types = []string{ironicDeviceType(vmediaBootDevices[s])}
		}
		if err := v.d.ejectMedia(ctx, n, types...); err != nil {
			return nil, callErr(err, false, "Redfish eject virtual media failed for node %s. Error: %s", n.UUID, errText(err))
		}
		return nil, nil
	}
	return nil, argErr("No handler for method %s", method)
}

// ironicDeviceType is the device type (vmediaTypes) taking Redfish media
// type mt.
func ironicDeviceType(mt string) string {
	for typ, mts := range vmediaTypes {
		if slices.Contains(mts, mt) {
			return typ
		}
	}
	return ""
}

// errText is a wrapped error's own text (a *driver.CallError's without
// Ironic's prefix, which the outer message adds again).
func errText(err error) string {
	if ce, ok := err.(*driver.CallError); ok {
		return strings.TrimPrefix(ce.Msg, "Redfish exception occurred. Error: ")
	}
	return err.Error()
}

// create POSTs the subscription Ironic builds (defaults: Protocol Redfish,
// Context "", EventTypes [Alert]) and answers the BMC's resource, filtered.
func (v *Vendor) create(ctx context.Context, n *model.Node, args map[string]any) (any, error) {
	payload := map[string]any{"Destination": args["Destination"], "Protocol": "Redfish", "Context": "", "EventTypes": []any{"Alert"}}
	for _, k := range []string{"Protocol", "Context", "EventTypes"} {
		if x, ok := args[k]; ok {
			payload[k] = x
		}
	}
	// Ironic's str(payload), in its key order; HttpHeaders (tokens,
	// passwords) are never shown.
	shown := fmt.Sprintf("{'Destination': %s, 'Protocol': %s, 'Context': %s, 'EventTypes': %s}",
		pyrepr.Repr(payload["Destination"]), pyrepr.Repr(payload["Protocol"]), pyrepr.Repr(payload["Context"]), pyrepr.Repr(payload["EventTypes"]))
	if h, ok := args["HttpHeaders"].([]any); ok && len(h) > 0 {
		payload["HttpHeaders"] = h
	}
	fail := func(err error) error {
		return callErr(err, false, "Failed to create subscription on node %s. Subscription payload: %s. Error: %s", n.UUID, shown, errText(err))
	}
	c, svc, err := v.eventService(ctx, n)
	if err != nil {
		return nil, fail(err)
	}
	resp, err := c.Post(svc.Subscriptions.ID, payload)
	if err != nil {
		return nil, fail(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	var out map[string]any
	if loc := resp.Header.Get("Location"); loc != "" {
		if err := c.getJSON(loc, &out); err != nil {
			return nil, fail(err)
		}
	} else if err := json.Unmarshal(body, &out); err != nil {
		return nil, fail(fmt.Errorf("the BMC answered the subscription with no Location and no resource"))
	}
	return filterSubscription(out), nil
}

// filterSubscription keeps the fields Ironic answers.
func filterSubscription(m map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range subscriptionFields {
		if x, ok := m[k]; ok {
			out[k] = x
		}
	}
	return out
}
