package bmcemu

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
)

// BIOS attribute types as Redfish's AttributeRegistry names them.
const (
	attrEnum    = "Enumeration"
	attrInteger = "Integer"
	attrString  = "String"
)

// biosAttr is one entry of the emulated BIOS attribute registry.
type biosAttr struct {
	Name          string
	Type          string
	Values        []string // Enumeration
	Lower, Upper  int      // Integer
	MinLen        int      // String
	MaxLen        int      // String
	ReadOnly      bool
	ResetRequired bool
	Unique        bool
	Default       func(m *Machine) any
}

func constant(v any) func(*Machine) any { return func(*Machine) any { return v } }

// biosRegistry is the emulated server's BIOS: what a modest x86 server's
// registry holds (a Dell-like subset), in registry order.
var biosRegistry = []biosAttr{
	{Name: "BootMode", Type: attrEnum, Values: []string{"Uefi", "Bios"}, ResetRequired: true, Default: constant("Uefi")},
	{Name: "ProcTurboMode", Type: attrEnum, Values: []string{"Enabled", "Disabled"}, ResetRequired: true, Default: constant("Enabled")},
	{Name: "ProcVirtualization", Type: attrEnum, Values: []string{"Enabled", "Disabled"}, ResetRequired: true, Default: constant("Enabled")},
	{Name: "SriovGlobalEnable", Type: attrEnum, Values: []string{"Enabled", "Disabled"}, ResetRequired: true, Default: constant("Disabled")},
	{Name: "PowerOnDelay", Type: attrInteger, Lower: 0, Upper: 300, ResetRequired: true, Default: constant(0)},
	{Name: "AssetTag", Type: attrString, MinLen: 0, MaxLen: 32, Default: constant("")},
	{Name: "SystemServiceTag", Type: attrString, MinLen: 0, MaxLen: 16, ReadOnly: true, Unique: true,
		Default: func(m *Machine) any { return serialOf(m) }},
}

// BIOSRegistryID is the AttributeRegistry the emulated Bios resource names.
const BIOSRegistryID = "BiosAttributeRegistry.v1_0_0"

func registryAttr(name string) (biosAttr, bool) {
	i := slices.IndexFunc(biosRegistry, func(a biosAttr) bool { return a.Name == name })
	if i < 0 {
		return biosAttr{}, false
	}
	return biosRegistry[i], true
}

// biosState is a machine's BIOS: the effective attributes and the pending
// ones (Bios/Settings) that the next boot applies, as real BMCs do.
type biosState struct {
	mu      sync.Mutex
	current map[string]any // nil until first used: the defaults
	pending map[string]any
	resets  int // ResetBios actions taken
}

func (m *Machine) biosDefaults() map[string]any {
	out := map[string]any{}
	for _, a := range biosRegistry {
		out[a.Name] = a.Default(m)
	}
	return out
}

// biosLocked returns the effective attributes (m.bios.mu held).
func (m *Machine) biosLocked() map[string]any {
	if m.bios.current == nil {
		m.bios.current = m.biosDefaults()
	}
	return m.bios.current
}

// BIOS returns copies of the machine's effective and pending BIOS
// attributes (what a test reads back).
func (m *Machine) BIOS() (current, pending map[string]any) {
	m.bios.mu.Lock()
	defer m.bios.mu.Unlock()
	return maps.Clone(m.biosLocked()), maps.Clone(m.bios.pending)
}

// applyPendingBIOS makes the pending settings effective (at power on or reset).
func (m *Machine) applyPendingBIOS() {
	m.bios.mu.Lock()
	defer m.bios.mu.Unlock()
	if len(m.bios.pending) == 0 {
		return
	}
	cur := m.biosLocked()
	maps.Copy(cur, m.bios.pending)
	m.bios.pending = nil
}

// checkBIOSValue validates one requested attribute against the registry; the
// error is the Redfish message id and text a BMC answers.
func checkBIOSValue(name string, v any) (code, msg string) {
	a, ok := registryAttr(name)
	if !ok {
		return "Base.1.8.PropertyUnknown", fmt.Sprintf("The property %s is not in the list of valid properties for the resource.", name)
	}
	if a.ReadOnly {
		return "Base.1.8.PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", name)
	}
	bad := func() (string, string) {
		return "Base.1.8.PropertyValueTypeError", fmt.Sprintf("The value %v for the property %s is of a different type than the property can accept.", jsonText(v), name)
	}
	switch a.Type {
	case attrEnum:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if !slices.Contains(a.Values, s) {
			return "Base.1.8.PropertyValueNotInList", fmt.Sprintf("The value %s for the property %s is not in the list of acceptable values.", s, name)
		}
	case attrInteger:
		f, ok := v.(float64)
		if !ok || f != float64(int(f)) {
			return bad()
		}
		if int(f) < a.Lower || int(f) > a.Upper {
			return "Base.1.8.PropertyValueOutOfRange", fmt.Sprintf("The value %v for the property %s is not in the supported range of acceptable values.", f, name)
		}
	case attrString:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if len(s) < a.MinLen || len(s) > a.MaxLen {
			return "Base.1.8.PropertyValueFormatError", fmt.Sprintf("The value %s for the property %s is of a different format than the property can accept.", s, name)
		}
	}
	return "", ""
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// serveBIOS serves Systems/{id}/Bios, Bios/Settings and Bios.ResetBios.
func (h redfishAPI) serveBIOS(w http.ResponseWriter, r *http.Request, m *Machine, base string, sub []string) {
	e := h.e
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		cur, _ := m.BIOS()
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#Bios.v1_2_0.Bios", "@odata.id": base, "Id": "BIOS", "Name": "BIOS Configuration Current Settings",
			"AttributeRegistry": BIOSRegistryID, "Attributes": cur,
			"@Redfish.Settings": map[string]any{
				"@odata.type":         "#Settings.v1_3_5.Settings",
				"SettingsObject":      odataID(base + "/Settings"),
				"SupportedApplyTimes": []string{"OnReset"},
			},
			"Actions": map[string]any{
				"#Bios.ResetBios": map[string]any{"target": base + "/Actions/Bios.ResetBios"},
			},
		})
	case len(sub) == 1 && sub[0] == "Settings" && r.Method == http.MethodGet:
		_, pending := m.BIOS()
		if pending == nil {
			pending = map[string]any{}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#Bios.v1_2_0.Bios", "@odata.id": base + "/Settings", "Id": "Settings",
			"Name": "BIOS Configuration Pending Settings", "AttributeRegistry": BIOSRegistryID, "Attributes": pending,
		})
	case len(sub) == 1 && sub[0] == "Settings" && r.Method == http.MethodPatch:
		h.patchBIOS(w, r, m)
	case len(sub) == 2 && sub[0] == "Actions" && sub[1] == "Bios.ResetBios" && r.Method == http.MethodPost:
		m.bios.mu.Lock()
		m.bios.pending = m.biosDefaults()
		m.bios.resets++
		m.bios.mu.Unlock()
		e.log.Info("BIOS reset to defaults at next boot", "machine", m.ID)
		w.WriteHeader(http.StatusNoContent)
	case len(sub) <= 2:
		methodNotAllowed(w)
	default:
		notFound(w, r)
	}
}

// patchBIOS takes {"Attributes": {...}} (and @Redfish.SettingsApplyTime)
// into the pending settings: all of them or, on any invalid one, none.
func (h redfishAPI) patchBIOS(w http.ResponseWriter, r *http.Request, m *Machine) {
	e := h.e
	var body struct {
		Attributes map[string]any
		ApplyTime  *struct{ ApplyTime string } `json:"@Redfish.SettingsApplyTime"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Attributes == nil {
		rfError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "The request body submitted was malformed JSON or lacks Attributes.")
		return
	}
	if body.ApplyTime != nil && body.ApplyTime.ApplyTime != "OnReset" {
		rfError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList",
			fmt.Sprintf("The value %s for the property ApplyTime is not in the list of acceptable values.", body.ApplyTime.ApplyTime))
		return
	}
	names := slices.Sorted(maps.Keys(body.Attributes))
	for _, name := range names {
		if code, msg := checkBIOSValue(name, body.Attributes[name]); code != "" {
			rfError(w, http.StatusBadRequest, code, msg)
			return
		}
	}
	m.bios.mu.Lock()
	if m.bios.pending == nil {
		m.bios.pending = map[string]any{}
	}
	for _, name := range names {
		v := body.Attributes[name]
		if f, ok := v.(float64); ok {
			v = int(f)
		}
		m.bios.pending[name] = v
	}
	m.bios.mu.Unlock()
	e.log.Info("BIOS settings pending until next boot", "machine", m.ID, "attributes", names)
	w.WriteHeader(http.StatusNoContent)
}

// serveRegistries serves the Registries collection and the BIOS attribute
// registry (the schema Ironic caches with each setting).
func (h redfishAPI) serveRegistries(w http.ResponseWriter, r *http.Request, sub []string) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w)
		return
	}
	base := rfRoot + "/Registries"
	file := base + "/" + BIOSRegistryID
	switch {
	case len(sub) == 0:
		writeJSON(w, http.StatusOK, collection("#MessageRegistryFileCollection.MessageRegistryFileCollection",
			"Registry File Collection", base, []any{odataID(file)}))
	case len(sub) == 1 && sub[0] == BIOSRegistryID:
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#MessageRegistryFile.v1_1_0.MessageRegistryFile", "@odata.id": file,
			"Id": BIOSRegistryID, "Name": "BIOS Attribute Registry File", "Registry": BIOSRegistryID, "Languages": []string{"en"},
			"Location": []any{map[string]any{"Language": "en", "Uri": file + "/registry"}},
		})
	case len(sub) == 2 && sub[0] == BIOSRegistryID && sub[1] == "registry":
		writeJSON(w, http.StatusOK, registryJSON())
	default:
		notFound(w, r)
	}
}

func registryJSON() map[string]any {
	attrs := make([]any, 0, len(biosRegistry))
	for _, a := range biosRegistry {
		x := map[string]any{"AttributeName": a.Name, "DisplayName": a.Name, "Type": a.Type,
			"ReadOnly": a.ReadOnly, "ResetRequired": a.ResetRequired, "IsSystemUniqueProperty": a.Unique, "Immutable": a.ReadOnly}
		switch a.Type {
		case attrEnum:
			vals := make([]any, len(a.Values))
			for i, v := range a.Values {
				vals[i] = map[string]any{"ValueName": v, "ValueDisplayName": v}
			}
			x["Value"] = vals
		case attrInteger:
			x["LowerBound"], x["UpperBound"] = a.Lower, a.Upper
		case attrString:
			x["MinLength"], x["MaxLength"] = a.MinLen, a.MaxLen
		}
		attrs = append(attrs, x)
	}
	return map[string]any{
		"@odata.type": "#AttributeRegistry.v1_3_0.AttributeRegistry", "Id": BIOSRegistryID, "Name": "BIOS Attribute Registry",
		"Language": "en", "OwningEntity": "Anvil", "RegistryVersion": "1.0.0",
		"RegistryEntries": map[string]any{"Attributes": attrs},
	}
}
