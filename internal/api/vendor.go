package api

import (
	"net/http"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
)

// minorInjectNMI is the version that added PUT .../management/inject_nmi.
const minorInjectNMI = 29

func (hs managementAPI) vendorRoutes() {
	s := hs.s
	passthru := func(driverLevel bool) func(*call) error {
		return func(rc *call) error { return hs.vendorPassthru(rc, driverLevel) }
	}
	methods := func(driverLevel bool) func(*call) error {
		return func(rc *call) error { return hs.vendorMethods(rc, driverLevel) }
	}
	all := func(fn func(*call) error, g guard) endpoint {
		o := op{fn, g}
		return endpoint{"GET": o, "POST": o, "PUT": o, "PATCH": o, "DELETE": o}
	}
	// The method is named by ?method= (the API reference) or as the last
	// path segment (what python-ironicclient sends).
	s.handle(all(passthru(false), nodeRule("baremetal:node:vendor_passthru")), "/v1/nodes/{ident}/vendor_passthru", "/v1/nodes/{ident}/vendor_passthru/{method}")
	s.handle(endpoint{"GET": {methods(false), nodeRule("baremetal:node:vendor_passthru")}}, "/v1/nodes/{ident}/vendor_passthru/methods")
	s.handle(all(passthru(true), rule("baremetal:driver:vendor_passthru")), "/v1/drivers/{name}/vendor_passthru", "/v1/drivers/{name}/vendor_passthru/{method}")
	s.handle(endpoint{"GET": {methods(true), rule("baremetal:driver:vendor_passthru")}}, "/v1/drivers/{name}/vendor_passthru/methods")
	s.handle(endpoint{"PUT": {hs.injectNMI, nodeRule("baremetal:node:inject_nmi")}}, "/v1/nodes/{ident}/management/inject_nmi")
}

// GET /v1/nodes/{ident}/vendor_passthru/methods and
// GET /v1/drivers/{name}/vendor_passthru/methods: {name: metadata}.
func (hs managementAPI) vendorMethods(rc *call, driverLevel bool) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	var ms map[string]driver.VendorMethod
	var err error
	if driverLevel {
		ms, err = s.cfg.Hardware.DriverVendorMethods(rc.ctx, rc.r.PathValue("name"))
	} else {
		ident, ierr := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
		if ierr != nil {
			return ierr
		}
		ms, err = s.cfg.Hardware.VendorMethods(rc.ctx, ident)
	}
	if err != nil {
		return err
	}
	w := &jw{}
	w.any(ms)
	return rc.json(200, w)
}

// {GET,POST,PUT,PATCH,DELETE} /v1/nodes/{ident}/vendor_passthru?method=NAME
// or .../vendor_passthru/NAME (and /v1/drivers/{name}/vendor_passthru): the
// body, a JSON object, is the
// method's arguments. A synchronous method answers 200 with its return
// value (null when none), an asynchronous one 202 with no body.
func (hs managementAPI) vendorPassthru(rc *call, driverLevel bool) error {
	s := hs.s
	if err := rc.checkQuery("method"); err != nil {
		return err
	}
	method := rc.r.PathValue("method")
	if method == "" {
		method, _ = rc.param("method")
	}
	if method == "" {
		return missingArg("method")
	}
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	args, ok := body.(map[string]any)
	if body == nil {
		args, ok = map[string]any{}, true
	}
	if !ok {
		return invalid("The body of a vendor passthru call must be a JSON object, not %s.", jsonType(body))
	}
	req := conductor.VendorRequest{Method: method, HTTPMethod: rc.r.Method, Args: args}
	if req.HTTPMethod == http.MethodHead {
		req.HTTPMethod = http.MethodGet
	}
	var res conductor.VendorResult
	if driverLevel {
		res, err = s.cfg.Hardware.DriverVendorPassthru(rc.ctx, rc.r.PathValue("name"), req)
	} else {
		ident, ierr := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
		if ierr != nil {
			return ierr
		}
		res, err = s.cfg.Hardware.VendorPassthru(rc.ctx, ident, req)
	}
	if err != nil {
		return err
	}
	if res.Async {
		return rc.accepted("")
	}
	if raw, isStr := res.Return.(string); res.Attach && isStr {
		rc.w.Header().Set("Content-Type", "application/octet-stream")
		rc.w.WriteHeader(http.StatusOK)
		_, _ = rc.w.Write([]byte(raw))
		return nil
	}
	w := &jw{}
	w.any(res.Return)
	return rc.json(200, w)
}

// PUT /v1/nodes/{ident}/management/inject_nmi (1.29; 404 below): 204 once
// the BMC took the interrupt.
func (hs managementAPI) injectNMI(rc *call) error {
	s := hs.s
	if rc.minor < minorInjectNMI {
		return errNotFound()
	}
	if err := rc.checkQuery(); err != nil {
		return err
	}
	if _, err := rc.decodeBody(s.cfg.MaxBodyBytes); err != nil {
		return err
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Management.InjectNMI(rc.ctx, ident, ""); err != nil {
		return err
	}
	return rc.noContent()
}
