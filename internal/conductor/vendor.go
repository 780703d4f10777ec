package conductor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// VendorRequest is one vendor passthru call (Ironic's vendor_passthru RPC):
// the method name from ?method=, the HTTP method it came with and the JSON
// object of its body.
type VendorRequest struct {
	Method, HTTPMethod string
	Args               map[string]any
	User               string
}

// VendorResult is what a vendor passthru call answers: the method's return
// value (nil for async methods, which answer 202), and Ironic's async and
// attach flags.
type VendorResult struct {
	Return any
	Async  bool
	Attach bool
}

// vendorOf is the node's vendor interface; nil when it has no methods
// (no-vendor, or an interface that only validates).
func (svc *Hardware) vendorOf(n *model.Node) (driver.Vendor, error) {
	c := svc.c
	drv, err := c.reg.For(n)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, err.Error())
	}
	v, _ := drv.Interface("vendor").(driver.Vendor)
	return v, nil
}

// VendorMethods lists the node's vendor passthru methods (GET
// .../vendor_passthru/methods): {} for an interface without any.
func (svc *Hardware) VendorMethods(ctx context.Context, ident string) (map[string]driver.VendorMethod, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return nil, err
	}
	v, err := svc.vendorOf(n)
	if err != nil || v == nil {
		return map[string]driver.VendorMethod{}, err
	}
	return maps.Clone(v.VendorMethods()), nil
}

// route finds method in a method table and checks the HTTP method, with
// Ironic's errors (InvalidParameterValue, 400).
func route(methods map[string]driver.VendorMethod, name, httpMethod string) (driver.VendorMethod, error) {
	m, ok := methods[name]
	if !ok {
		return m, fault.New(fault.Invalid, "No handler for method %s", name)
	}
	if !slices.Contains(m.HTTPMethods, strings.ToUpper(httpMethod)) {
		return m, fault.New(fault.Invalid, "The method %s does not support HTTP %s", name, strings.ToUpper(httpMethod))
	}
	return m, nil
}

// driverFault turns a driver's error into the client's answer: refused
// arguments 400, hardware failures 500 (404 where Ironic says so) with
// their text, ErrUnsupported 400; anything else stays internal.
func driverFault(err error) error {
	if err == nil {
		return nil
	}
	var ae *driver.ArgError
	if errors.As(err, &ae) {
		return fault.Wrap(fault.Invalid, err, ae.Msg)
	}
	var ce *driver.CallError
	if errors.As(err, &ce) {
		if ce.NotFound {
			return fault.Wrap(fault.NotFound, err, ce.Msg)
		}
		return fault.Wrap(fault.DriverFailed, err, ce.Msg)
	}
	if errors.Is(err, driver.ErrUnsupported) {
		return fault.Wrap(fault.Invalid, err, err.Error())
	}
	return err
}

// VendorPassthru calls a node's vendor method, as Ironic's conductor: the
// method must exist and take the HTTP method; the node is locked when the
// method requires it (the default); the arguments are validated; then a
// synchronous method runs while the caller waits (its value is answered)
// and an asynchronous one runs in a worker (202; a failure is logged and
// recorded in the node's history). Vendor methods do not change the node.
func (svc *Hardware) VendorPassthru(ctx context.Context, ident string, req VendorRequest) (VendorResult, error) {
	c := svc.c
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return VendorResult{}, err
	}
	v, err := svc.vendorOf(n)
	if err != nil {
		return VendorResult{}, err
	}
	var methods map[string]driver.VendorMethod
	if v != nil {
		methods = v.VendorMethods()
	}
	m, err := route(methods, req.Method, req.HTTPMethod)
	if err != nil {
		return VendorResult{}, err
	}
	res := VendorResult{Async: m.Async, Attach: m.Attach}
	release := func() {}
	if m.RequireExclusiveLock == nil || *m.RequireExclusiveLock {
		t, err := c.acquire(ctx, n.UUID, req.User)
		if err != nil {
			return res, err
		}
		n, release = t.node, t.release
	}
	task := &driver.Task{Node: n}
	if err := v.ValidateVendor(ctx, task, req.Method, req.Args); err != nil {
		release()
		return res, driverFault(err)
	}
	httpMethod := strings.ToUpper(req.HTTPMethod)
	if !m.Async {
		defer release()
		ret, err := v.CallVendor(ctx, task, req.Method, httpMethod, req.Args)
		if err != nil {
			c.log.Error("vendor passthru failed", "node", n.UUID, "method", req.Method, "err", err)
			return res, driverFault(err)
		}
		res.Return = ret
		return res, nil
	}
	if err := c.workers.reserve(); err != nil {
		release()
		return res, err
	}
	c.workers.spawn(func(wctx context.Context) {
		defer release()
		if _, err := v.CallVendor(wctx, task, req.Method, httpMethod, req.Args); err != nil {
			c.log.Error("vendor passthru failed", "node", n.UUID, "method", req.Method, "err", err)
			c.addHistory(context.WithoutCancel(wctx), []*model.HistoryEvent{{NodeUUID: n.UUID, Conductor: c.cfg.Host, CreatedAt: c.now().UTC(),
				Severity: model.SeverityError, EventType: "vendor", User: req.User,
				Event: fmt.Sprintf("vendor_passthru failed with method %s: %s", req.Method, c.errorText(err))}})
			return
		}
		c.log.Info("vendor passthru done", "node", n.UUID, "method", req.Method)
	})
	return res, nil
}

// driverVendor is the default vendor interface of an enabled hardware type
// (Ironic's driver_vendor_passthru uses the default one).
func (svc *Hardware) driverVendor(name string) (driver.Vendor, error) {
	c := svc.c
	if _, ok := c.reg.HardwareType(name); !ok {
		return nil, fault.New(fault.NotFound, "Could not find the following driver(s) or hardware type(s): %s.", name)
	}
	n := &model.Node{Driver: name}
	if err := c.reg.Compose(n); err != nil {
		return nil, fault.Wrap(fault.Invalid, err, err.Error())
	}
	return svc.vendorOf(n)
}

// driverMethods is the driver-level method table of a vendor interface.
func driverMethods(v driver.Vendor) (map[string]driver.VendorMethod, driver.DriverVendor) {
	dv, ok := v.(driver.DriverVendor)
	if !ok {
		return map[string]driver.VendorMethod{}, nil
	}
	return maps.Clone(dv.DriverVendorMethods()), dv
}

// DriverVendorMethods lists a hardware type's driver-level vendor methods
// (GET /v1/drivers/{driver}/vendor_passthru/methods).
func (svc *Hardware) DriverVendorMethods(_ context.Context, name string) (map[string]driver.VendorMethod, error) {
	v, err := svc.driverVendor(name)
	if err != nil {
		return nil, err
	}
	ms, _ := driverMethods(v)
	return ms, nil
}

// DriverVendorPassthru calls a driver-level vendor method (no node, no
// lock), synchronously or in a worker as the method says.
func (svc *Hardware) DriverVendorPassthru(ctx context.Context, name string, req VendorRequest) (VendorResult, error) {
	c := svc.c
	v, err := svc.driverVendor(name)
	if err != nil {
		return VendorResult{}, err
	}
	ms, dv := driverMethods(v)
	m, err := route(ms, req.Method, req.HTTPMethod)
	if err != nil {
		return VendorResult{}, err
	}
	res := VendorResult{Async: m.Async, Attach: m.Attach}
	httpMethod := strings.ToUpper(req.HTTPMethod)
	if !m.Async {
		ret, err := dv.CallDriverVendor(ctx, req.Method, httpMethod, req.Args)
		res.Return = ret
		return res, driverFault(err)
	}
	if err := c.workers.reserve(); err != nil {
		return res, err
	}
	c.workers.spawn(func(wctx context.Context) {
		if _, err := dv.CallDriverVendor(wctx, req.Method, httpMethod, req.Args); err != nil {
			c.log.Error("driver vendor passthru failed", "driver", name, "method", req.Method, "err", err)
		}
	})
	return res, nil
}

// InjectNMI injects a non-maskable interrupt through the node's management
// interface under its lock (PUT .../management/inject_nmi), synchronously
// as Ironic. A management interface without it is Ironic's
// UnsupportedDriverExtension; a BMC failure is the driver's
// *driver.CallError (500 with Ironic's text).
func (svc *Management) InjectNMI(ctx context.Context, ident, user string) error {
	c := svc.c
	t, err := c.acquire(ctx, ident, user)
	if err != nil {
		return err
	}
	defer t.release()
	m, err := svc.management(t.node)
	if err != nil {
		return err
	}
	nmi, ok := m.(driver.NMIInjector)
	if !ok {
		return unsupported(t.node, "inject_nmi")
	}
	if err := nmi.InjectNMI(ctx, t.driverTask(ctx)); err != nil {
		c.log.Error("inject NMI failed", "node", t.node.UUID, "err", err)
		return driverFault(err)
	}
	t.record(&model.HistoryEvent{Severity: model.SeverityInfo, EventType: "management", Event: "NMI injected"})
	c.addHistory(ctx, t.history)
	t.history = nil
	return nil
}
