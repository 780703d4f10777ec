package api

import (
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// Minor versions of driver behaviour.
const (
	minorDriverLinks    = 14
	minorDynamicDrivers = 30
	minorDriverFields   = 77
)

// driverIfaceMinor hides interface kinds older clients do not know.
var driverIfaceMinor = map[string]int{"storage": 33, "rescue": 38, "bios": 40, "firmware": 86}

func (hs driverAPI) driverRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listDrivers, rule("baremetal:driver:get")}}, "/v1/drivers")
	s.handle(endpoint{"GET": {hs.getDriver, rule("baremetal:driver:get")}}, "/v1/drivers/{name}")
	s.handle(endpoint{"GET": {hs.driverProperties, rule("baremetal:driver:get_properties")}}, "/v1/drivers/{name}/properties")
}

func driverNotFound(name string) error {
	return fault.New(fault.NotFound, "Could not find the following driver(s) or hardware type(s): %s.", name)
}

// sortedDrivers returns the enabled hardware types by name.
func (hs driverAPI) sortedDrivers() []conductor.DriverInfo {
	s := hs.s
	drivers := slices.Clone(s.cfg.Hardware.Drivers())
	slices.SortFunc(drivers, func(a, b conductor.DriverInfo) int { return strings.Compare(a.Name, b.Name) })
	return drivers
}

// GET /v1/drivers
func (hs driverAPI) listDrivers(rc *call) error {
	if err := rc.checkQuery("type", "detail", "fields"); err != nil {
		return err
	}
	detail, err := rc.boolParam("detail")
	if err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if len(fields) > 0 && detail != nil && *detail {
		return invalid("Can not specify ?detail=True and fields in the same request.")
	}
	typ, hasType := rc.param("type")
	if (detail != nil || hasType) && rc.minor < minorDynamicDrivers {
		return minVersionRequired(minorDynamicDrivers)
	}
	if fields != nil && rc.minor < minorDriverFields {
		return notAcceptable()
	}
	if hasType && typ != "classic" && typ != "dynamic" {
		return invalid("\"type\" filter must be one of \"classic\" or \"dynamic\", if specified.")
	}
	var drivers []conductor.DriverInfo
	if typ != "classic" {
		drivers = hs.sortedDrivers()
	}
	isDetail := detail != nil && *detail
	if len(drivers) > 0 {
		if err := hs.checkDriverFields(rc, fields, isDetail); err != nil {
			return err
		}
	}
	w := &jw{}
	w.rootObj()
	w.key("drivers")
	w.arr()
	for _, d := range drivers {
		hs.writeDriver(rc, w, d, isDetail, fields)
	}
	w.endArr()
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/drivers/{name}
func (hs driverAPI) getDriver(rc *call) error {
	if err := rc.checkQuery("fields"); err != nil {
		return err
	}
	fields := rc.fieldsParam()
	if fields != nil && rc.minor < minorDriverFields {
		return notAcceptable()
	}
	name := rc.r.PathValue("name")
	i := slices.IndexFunc(hs.sortedDrivers(), func(d conductor.DriverInfo) bool { return d.Name == name })
	if i < 0 {
		return driverNotFound(name)
	}
	if err := hs.checkDriverFields(rc, fields, true); err != nil {
		return err
	}
	w := &jw{}
	hs.writeDriver(rc, w, hs.sortedDrivers()[i], true, fields)
	return rc.json(200, w)
}

// GET /v1/drivers/{name}/properties
func (hs driverAPI) driverProperties(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	name := rc.r.PathValue("name")
	d, err := s.cfg.Hardware.Driver(name)
	if err != nil {
		if fault.KindOf(err) == fault.NotFound {
			return fault.New(fault.NotFound, "The driver '%s' is unknown.", name)
		}
		return err
	}
	return rc.json(200, stringMapJSON(d.Properties))
}

// stringMapJSON renders a name → description map, keys sorted.
func stringMapJSON(m map[string]string) *jw {
	w := &jw{}
	w.rootObj()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.key(k)
		w.str(m[k])
	}
	w.endObj()
	return w
}

// driverKeys lists the keys of a driver document at the request version.
func (hs driverAPI) driverKeys(rc *call, detail bool) []string {
	keys := []string{"name", "hosts", "links"}
	if rc.minor >= minorDriverLinks {
		keys = append(keys, "properties")
	}
	if rc.minor < minorDynamicDrivers {
		return keys
	}
	keys = append(keys, "type")
	if detail {
		for _, kind := range hs.driverKinds(rc) {
			keys = append(keys, "default_"+kind+"_interface", "enabled_"+kind+"_interfaces")
		}
	}
	return keys
}

// driverKinds are the interface kinds shown at the request version.
func (hs driverAPI) driverKinds(rc *call) []string {
	var kinds []string
	for _, kind := range model.InterfaceNames {
		if m, ok := driverIfaceMinor[kind]; !ok || rc.minor >= m {
			kinds = append(kinds, kind)
		}
	}
	return kinds
}

// checkDriverFields refuses requested fields a driver does not have.
func (hs driverAPI) checkDriverFields(rc *call, fields []string, detail bool) error {
	if fields == nil {
		return nil
	}
	keys := hs.driverKeys(rc, detail)
	var bad []string
	for _, f := range fields {
		if !slices.Contains(keys, f) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return invalid("Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
	}
	return nil
}

// writeDriver writes one hardware type; fields (when given) keeps only
// those keys plus links.
func (hs driverAPI) writeDriver(rc *call, w *jw, d conductor.DriverInfo, detail bool, fields []string) {
	want := func(k string) bool { return fields == nil || k == "links" || slices.Contains(fields, k) }
	w.obj()
	for _, k := range hs.driverKeys(rc, detail) {
		if !want(k) {
			continue
		}
		w.key(k)
		switch {
		case k == "name":
			w.str(d.Name)
		case k == "hosts":
			w.strings(d.Hosts)
		case k == "links":
			rc.links(w, "drivers", d.Name)
		case k == "properties":
			rc.links(w, "drivers", d.Name, "properties")
		case k == "type":
			w.str("dynamic")
		case strings.HasPrefix(k, "default_"):
			w.strOrNull(d.Defaults[strings.TrimSuffix(strings.TrimPrefix(k, "default_"), "_interface")])
		default:
			w.strings(d.Interfaces[strings.TrimSuffix(strings.TrimPrefix(k, "enabled_"), "_interfaces")])
		}
	}
	w.endObj()
}
