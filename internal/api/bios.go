package api

import (
	"errors"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// Versions of the node sub-resources of this file (Ironic's
// MINOR_40_BIOS_INTERFACE, MINOR_74_BIOS_REGISTRY and
// MINOR_86_FIRMWARE_INTERFACE); below them they do not exist (404).
const (
	minorBIOS         = 40
	minorBIOSRegistry = 74
	minorFirmware     = 86
	// minorFirmwareIdentity added a firmware component's vendor, model and
	// serial_number (Ironic's MINOR_114_FIRMWARE_IDENTITY).
	minorFirmwareIdentity = 114
)

// BIOS setting fields: the default ones and those ?detail=true adds
// (Ironic's _DEFAULT_RETURN_FIELDS and _DEFAULT_FIELDS_WITH_REGISTRY).
var (
	biosDefaultFields = []string{"name", "value"}
	biosDetailFields  = []string{"name", "value", "attribute_type", "allowable_values", "lower_bound",
		"max_length", "min_length", "read_only", "reset_required", "unique", "upper_bound"}
	firmwareFields         = []string{"component", "initial_version", "current_version", "last_version_flashed"}
	firmwareIdentityFields = []string{"vendor", "model", "serial_number"}
)

func (hs managementAPI) biosRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.listBIOS, nodeRule("baremetal:node:bios:get")}}, "/v1/nodes/{ident}/bios")
	s.handle(endpoint{"GET": {hs.getBIOS, nodeRule("baremetal:node:bios:get")}}, "/v1/nodes/{ident}/bios/{setting}")
	s.handle(endpoint{"GET": {hs.listFirmware, nodeRule("baremetal:node:firmware:get")}}, "/v1/nodes/{ident}/firmware")
}

// returnFields is Ironic's get_request_return_fields: ?detail and ?fields
// need version minor, and exclude each other.
func (hs managementAPI) returnFields(rc *call, minor int, defaults, detailed []string) ([]string, error) {
	detail, err := rc.boolParam("detail")
	if err != nil {
		return nil, err
	}
	fields := rc.fieldsParam()
	if detail != nil && rc.minor < minor {
		return nil, invalid("Invalid query parameter ?detail=%s received.", pyrepr.Bool(*detail))
	}
	if fields != nil && rc.minor < minor {
		return nil, invalid("Invalid query parameter ?fields=%s received.", pyrepr.Strings(fields))
	}
	if fields != nil && detail != nil && *detail {
		return nil, invalid("Can not specify ?detail=True and fields in the same request.")
	}
	switch {
	case fields != nil:
		var bad []string
		for _, f := range fields {
			if !slices.Contains(detailed, f) {
				bad = append(bad, f)
			}
		}
		if bad != nil {
			return nil, invalid("Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
		}
		return fields, nil
	case detail != nil && *detail:
		return detailed, nil
	}
	return defaults, nil
}

// nodeSubFields is nodeSub of a node's list added at 1.minor that takes
// ?detail= and ?fields= from 1.fieldsMinor: the fields to show
// (returnFields) are read before the node.
func (hs managementAPI) nodeSubFields(rc *call, minor, fieldsMinor int, defaults, detailed []string) (*model.Node, string, []string, error) {
	if err := rc.subAllowed(minor, "detail", "fields"); err != nil {
		return nil, "", nil, err
	}
	fields, err := hs.returnFields(rc, fieldsMinor, defaults, detailed)
	if err != nil {
		return nil, "", nil, err
	}
	n, raw, err := (nodeAPI{rc.s}).loadNode(rc)
	return n, raw, fields, err
}

// GET /v1/nodes/{ident}/bios (1.40): {"bios": [...]}; ?detail=true and
// ?fields= from 1.74.
func (hs managementAPI) listBIOS(rc *call) error {
	s := hs.s
	n, raw, fields, err := hs.nodeSubFields(rc, minorBIOS, minorBIOSRegistry, biosDefaultFields, biosDetailFields)
	if err != nil {
		return err
	}
	settings, err := s.cfg.Details.Settings().ListBIOSSettings(rc.ctx, n.UUID)
	if err != nil {
		return err
	}
	return writeList(rc, "bios", settings, 0, 256, func(w *jw, b model.BIOSSetting) {
		hs.writeBIOS(rc, w, raw, b, fields) // Ironic links with the ident as given
	}, nil)
}

// GET /v1/nodes/{ident}/bios/{setting} (1.40): {"<name>": {...}}, with the
// registry fields from 1.74.
func (hs managementAPI) getBIOS(rc *call) error {
	s := hs.s
	n, _, err := rc.nodeSub(minorBIOS)
	if err != nil {
		return err
	}
	name := rc.r.PathValue("setting")
	b, err := s.cfg.Details.Settings().GetBIOSSetting(rc.ctx, n.UUID, name)
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "Node %s doesn't have a BIOS setting '%s'", n.UUID, name)
	}
	if err != nil {
		return err
	}
	fields := biosDefaultFields
	if rc.minor >= minorBIOSRegistry {
		fields = biosDetailFields
	}
	w := &jw{}
	w.rootObj()
	w.key(name)
	hs.writeBIOS(rc, w, n.UUID, *b, fields)
	w.endObj()
	return rc.json(200, w)
}

// writeBIOS writes one setting as Ironic's object_to_dict: created_at,
// updated_at, the fields, the links.
func (hs managementAPI) writeBIOS(rc *call, w *jw, node string, b model.BIOSSetting, fields []string) {
	w.obj()
	w.key("created_at")
	w.timestamp(b.CreatedAt)
	w.key("updated_at")
	w.timestamp(b.UpdatedAt)
	for _, f := range fields {
		w.key(f)
		switch f {
		case "name":
			w.str(b.Name)
		case "value":
			strPtr(w, b.Value)
		case "attribute_type":
			strPtr(w, b.AttributeType)
		case "allowable_values":
			w.strings(b.AllowableValues)
		case "lower_bound":
			intPtr(w, b.LowerBound)
		case "upper_bound":
			intPtr(w, b.UpperBound)
		case "min_length":
			intPtr(w, b.MinLength)
		case "max_length":
			intPtr(w, b.MaxLength)
		case "read_only":
			w.boolPtr(b.ReadOnly)
		case "reset_required":
			w.boolPtr(b.ResetRequired)
		case "unique":
			w.boolPtr(b.Unique)
		}
	}
	w.key("links")
	rc.links(w, "nodes", node, "bios", b.Name)
	w.endObj()
}

func strPtr(w *jw, s *string) {
	if s == nil {
		w.null()
		return
	}
	w.str(*s)
}

func intPtr(w *jw, i *int64) {
	if i == nil {
		w.null()
		return
	}
	w.integer(*i)
}

// GET /v1/nodes/{ident}/firmware (1.86): {"firmware": [...]}.
func (hs managementAPI) listFirmware(rc *call) error {
	s := hs.s
	known := firmwareFields
	if rc.minor >= minorFirmwareIdentity {
		known = slices.Concat(firmwareFields, firmwareIdentityFields)
	} else if err := hs.firmwareIdentityRefused(rc); err != nil {
		return err
	}
	n, _, fields, err := hs.nodeSubFields(rc, minorFirmware, minorFirmware, known, known)
	if err != nil {
		return err
	}
	comps, err := s.cfg.Details.Settings().ListFirmwareComponents(rc.ctx, n.UUID)
	if err != nil {
		return err
	}
	return writeList(rc, "firmware", comps, 0, 256, func(w *jw, c model.FirmwareComponent) {
		w.obj()
		w.key("created_at")
		w.timestamp(c.CreatedAt)
		w.key("updated_at")
		w.timestamp(c.UpdatedAt)
		for _, f := range fields {
			w.key(f)
			switch f {
			case "component":
				w.str(c.Component)
			case "initial_version":
				w.strOrNull(c.InitialVersion)
			case "current_version":
				w.strOrNull(c.CurrentVersion)
			case "last_version_flashed":
				w.strOrNull(c.LastVersionFlashed)
			case "vendor":
				w.strOrNull(c.Vendor)
			case "model":
				w.strOrNull(c.Model)
			case "serial_number":
				w.strOrNull(c.SerialNumber)
			}
		}
		w.endObj()
	}, nil)
}

// firmwareIdentityRefused is Ironic's answer below 1.114 to ?fields=
// naming vendor, model or serial_number: a 400 after the node is found
// (the names are in the query schema's enum at every version).
func (hs managementAPI) firmwareIdentityRefused(rc *call) error {
	var asked []string
	for _, f := range rc.fieldsParam() {
		if slices.Contains(firmwareIdentityFields, f) {
			asked = append(asked, f)
		}
	}
	if asked == nil || rc.minor < minorFirmware {
		return nil
	}
	if _, _, err := rc.nodeSub(minorFirmware, "detail", "fields"); err != nil {
		return err
	}
	slices.Sort(asked)
	return invalid("Fields %s are not allowed in this API version. They require at least API version 1.%d.",
		strings.Join(slices.Compact(asked), ", "), minorFirmwareIdentity)
}
