package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// BIOS is the redfish bios interface (Ironic's RedfishBIOS; idrac's
// idrac-redfish is the same): the system's Bios resource, changed through
// its @Redfish.Settings object with apply time OnReset, then a reboot that
// makes the BMC apply them, then a read back that checks and caches them.
type BIOS struct{ d *Driver }

// BIOS returns the driver's bios interface.
func (d *Driver) BIOS() *BIOS { return &BIOS{d: d} }

var (
	_ driver.Stepper = (*BIOS)(nil)
	_ driver.Cacher  = (*BIOS)(nil)
)

// Steps of the bios interface (Ironic's: priority 0, so manual only).
const (
	StepApplyConfiguration = "apply_configuration"
	StepFactoryReset       = "factory_reset"
)

// applyArgs is apply_configuration's argsinfo (Ironic's).
var applyArgs = map[string]driver.ArgInfo{"settings": {Description: "A list of BIOS settings to be applied", Required: true}}

// Validate checks driver_info without contacting the BMC.
func (b *BIOS) Validate(t *driver.Task) error {
	n := t.Node
	_, err := parseInfo(n)
	return err
}

// Steps offers apply_configuration and factory_reset as clean, deploy and
// service steps.
func (b *BIOS) Steps(n *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if iface != "bios" {
		return nil
	}
	return []driver.Step{
		{Interface: "bios", Step: StepApplyConfiguration, ArgsInfo: applyArgs},
		{Interface: "bios", Step: StepFactoryReset, ArgsInfo: map[string]driver.ArgInfo{}},
	}
}

// biosResource is the Bios resource, as much as the interface reads.
type biosResource struct {
	Path       string         `json:"@odata.id"`
	Registry   string         `json:"AttributeRegistry"`
	Attributes map[string]any `json:"Attributes"`
	Settings   *struct {
		Object     link     `json:"SettingsObject"`
		ApplyTimes []string `json:"SupportedApplyTimes"`
	} `json:"@Redfish.Settings"`
	Actions struct {
		Reset *struct {
			Target string `json:"target"`
		} `json:"#Bios.ResetBios"`
	} `json:"Actions"`
}

// readBIOS finds and reads the system's Bios resource.
func (b *BIOS) readBIOS(ctx context.Context, n *model.Node) (*conn, *biosResource, error) {
	c, sysPath, err := b.d.target(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	var sys struct{ Bios *link }
	if err := c.getJSON(sysPath, &sys); err != nil {
		return nil, nil, err
	}
	if sys.Bios == nil || sys.Bios.ID == "" {
		return nil, nil, fmt.Errorf("Cannot fetch BIOS attributes for node %s, BIOS settings are not supported.: %w", n.UUID, driver.ErrUnsupported)
	}
	var res biosResource
	if err := c.getJSON(sys.Bios.ID, &res); err != nil {
		return nil, nil, err
	}
	return c, &res, nil
}

// ExecuteStep runs apply_configuration or factory_reset.
func (b *BIOS) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	switch s.Step {
	case StepApplyConfiguration:
		return driver.Done, b.apply(ctx, t, s.Args["settings"])
	case StepFactoryReset:
		return driver.Done, b.factoryReset(ctx, t)
	}
	return driver.Done, fmt.Errorf("the redfish bios interface has no step %s", s.Step)
}

func (b *BIOS) apply(ctx context.Context, t *driver.Task, raw any) error {
	n := t.Node
	settings, err := driver.ParseBIOSSettings(raw)
	if err != nil {
		return err
	}
	c, res, err := b.readBIOS(ctx, n)
	if err != nil {
		return err
	}
	schema := b.registry(c, res)
	attrs, err := convertSettings(n, settings, res.Attributes, schema)
	if err != nil {
		return err
	}
	pending := b.pending(c, res)
	if matches(attrs, res.Attributes, pending) {
		b.d.cfg.Log.Info("all requested BIOS settings already match, skipping apply and reboot", "node", n.UUID)
		return b.cacheFrom(t, res, schema)
	}
	if res.Settings == nil || res.Settings.Object.ID == "" {
		return fmt.Errorf("Redfish BIOS apply configuration failed for node %s. Error: the Bios resource has no @Redfish.Settings object", n.UUID)
	}
	payload := map[string]any{"Attributes": attrs}
	if slices.Contains(res.Settings.ApplyTimes, "OnReset") {
		payload["@Redfish.SettingsApplyTime"] = map[string]any{"ApplyTime": "OnReset"}
	}
	resp, err := c.Patch(res.Settings.Object.ID, payload)
	if err != nil {
		return fmt.Errorf("Redfish BIOS apply configuration failed for node %s. Error: %w", n.UUID, err)
	}
	resp.Body.Close()
	if err := b.d.rebootToApply(ctx, t, "its BIOS settings"); err != nil {
		return err
	}
	c, res, err = b.readBIOS(ctx, n)
	if err != nil {
		return err
	}
	if left := unapplied(attrs, res.Attributes, b.pending(c, res)); len(left) > 0 {
		return fmt.Errorf("Redfish BIOS apply_configuration step failed. Attributes %s are not updated.", pyrepr.Repr(left))
	}
	return b.cacheFrom(t, res, schema)
}

func (b *BIOS) factoryReset(ctx context.Context, t *driver.Task) error {
	n := t.Node
	c, res, err := b.readBIOS(ctx, n)
	if err != nil {
		return err
	}
	if res.Actions.Reset == nil || res.Actions.Reset.Target == "" {
		return fmt.Errorf("Redfish BIOS factory reset failed for node %s. Error: the Bios resource has no #Bios.ResetBios action", n.UUID)
	}
	resp, err := c.Post(res.Actions.Reset.Target, map[string]any{})
	if err != nil {
		return fmt.Errorf("Redfish BIOS factory reset failed for node %s. Error: %w", n.UUID, err)
	}
	resp.Body.Close()
	if err := b.d.rebootToApply(ctx, t, "its BIOS settings"); err != nil {
		return err
	}
	c, res, err = b.readBIOS(ctx, n)
	if err != nil {
		return err
	}
	return b.cacheFrom(t, res, b.registry(c, res))
}

// pending reads the settings object's attributes (none when unreadable).
func (b *BIOS) pending(c *conn, res *biosResource) map[string]any {
	if res.Settings == nil || res.Settings.Object.ID == "" {
		return nil
	}
	var p struct{ Attributes map[string]any }
	if err := c.getJSON(res.Settings.Object.ID, &p); err != nil {
		return nil
	}
	return p.Attributes
}

// convertSettings checks the settings against the attribute registry and
// converts their values to the registry's types, as Ironic's
// _validate_and_convert_settings (strings become integers and booleans).
// Names the registry does not know are sent as given: the BMC decides.
func convertSettings(n *model.Node, settings []driver.BIOSSetting, current map[string]any, schema map[string]model.BIOSSetting) (map[string]any, error) {
	out := map[string]any{}
	var invalid []string
	for _, s := range settings {
		v := s.Value
		reg, ok := schema[s.Name]
		if !ok {
			out[s.Name] = v
			continue
		}
		typ := deref(reg.AttributeType)
		switch {
		case reg.ReadOnly != nil && *reg.ReadOnly:
			invalid = append(invalid, s.Name)
		case typ == "Enumeration":
			if str, _ := v.(string); len(reg.AllowableValues) > 0 && !slices.Contains(reg.AllowableValues, str) {
				invalid = append(invalid, s.Name)
			}
		case typ == "Integer":
			i, err := toInt(v)
			if err != nil || (reg.LowerBound != nil && i < *reg.LowerBound) || (reg.UpperBound != nil && i > *reg.UpperBound) {
				invalid = append(invalid, s.Name)
				continue
			}
			v = i
		case typ == "Boolean":
			if str, ok := v.(string); ok {
				v = strings.EqualFold(str, "true")
			}
		case typ == "String":
			str, _ := v.(string)
			if (reg.MinLength != nil && int64(len(str)) < *reg.MinLength) || (reg.MaxLength != nil && int64(len(str)) > *reg.MaxLength) {
				invalid = append(invalid, s.Name)
			}
		}
		out[s.Name] = v
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("Redfish BIOS apply_configuration failed for node %s: invalid value for setting(s): %s", n.UUID, strings.Join(invalid, ", "))
	}
	return out, nil
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case float64:
		if x != float64(int64(x)) {
			return 0, errors.New("not an integer")
		}
		return int64(x), nil
	case string:
		return strconv.ParseInt(strings.TrimSpace(x), 10, 64)
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	}
	return 0, errors.New("not an integer")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// same compares two attribute values as JSON (5 and 5.0 are the same).
func same(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	if string(x) == string(y) {
		return true
	}
	fa, errA := toInt(a)
	fb, errB := toInt(b)
	return errA == nil && errB == nil && fa == fb && !isString(a) && !isString(b)
}

func isString(v any) bool { _, ok := v.(string); return ok }

// matches reports whether every requested attribute already has its value
// and no conflicting change is pending (Ironic skips the reboot then).
func matches(want, current, pending map[string]any) bool {
	for k, v := range want {
		if !same(current[k], v) {
			return false
		}
		if p, ok := pending[k]; ok && !same(p, v) {
			return false
		}
	}
	return true
}

// unapplied is Ironic's _get_unapplied_bios_attrs: requested attributes
// whose value is not current, or that are still pending on a BMC that keeps
// only changed attributes pending.
func unapplied(want, current, pending map[string]any) map[string]any {
	purge := len(pending) <= len(want)
	left := map[string]any{}
	for k, v := range want {
		if !same(current[k], v) {
			left[k] = v
		} else if _, ok := pending[k]; purge && ok {
			left[k] = v
		}
	}
	return left
}

// Cache reads the BIOS settings into t.BIOS (Ironic's cache_bios_settings).
func (b *BIOS) Cache(ctx context.Context, t *driver.Task) error {
	c, res, err := b.readBIOS(ctx, t.Node)
	if err != nil {
		return err
	}
	return b.cacheFrom(t, res, b.registry(c, res))
}

// cacheFrom turns the Bios attributes and the registry's schema into the
// node's settings.
func (b *BIOS) cacheFrom(t *driver.Task, res *biosResource, schema map[string]model.BIOSSetting) error {
	if res.Attributes == nil {
		return fmt.Errorf("Cannot fetch BIOS attributes for node %s, BIOS settings are not supported.: %w", t.Node.UUID, driver.ErrUnsupported)
	}
	out := make([]model.BIOSSetting, 0, len(res.Attributes))
	for _, name := range slices.Sorted(maps.Keys(res.Attributes)) {
		s := schema[name]
		s.Name, s.Value = name, driver.SettingText(res.Attributes[name])
		out = append(out, s)
	}
	t.BIOS = &out
	return nil
}

// registry reads the BIOS attribute registry the Bios resource names, the
// way sushy finds it (the service root's Registries, the file whose Id or
// Registry matches, its English location), as a schema per attribute. A
// BMC without one gives no schema (Ironic logs and goes on).
func (b *BIOS) registry(c *conn, res *biosResource) map[string]model.BIOSSetting {
	out := map[string]model.BIOSSetting{}
	if res.Registry == "" {
		return out
	}
	uri, err := registryURI(c, res.Registry)
	if err != nil || uri == "" {
		b.d.cfg.Log.Info("cannot get the BIOS attribute registry", "registry", res.Registry, "err", err)
		return out
	}
	var reg struct {
		RegistryEntries struct {
			Attributes []struct {
				Name          string   `json:"AttributeName"`
				Type          *string  `json:"Type"`
				Unique        *bool    `json:"IsSystemUniqueProperty"`
				ReadOnly      *bool    `json:"ReadOnly"`
				ResetRequired *bool    `json:"ResetRequired"`
				LowerBound    *float64 `json:"LowerBound"`
				UpperBound    *float64 `json:"UpperBound"`
				MinLength     *float64 `json:"MinLength"`
				MaxLength     *float64 `json:"MaxLength"`
				Value         []struct {
					Name    string `json:"ValueName"`
					Display string `json:"ValueDisplayName"`
				} `json:"Value"`
			} `json:"Attributes"`
		} `json:"RegistryEntries"`
	}
	if err := c.getJSON(uri, &reg); err != nil {
		b.d.cfg.Log.Info("cannot read the BIOS attribute registry", "uri", uri, "err", err)
		return out
	}
	for _, a := range reg.RegistryEntries.Attributes {
		s := model.BIOSSetting{Name: a.Name, AttributeType: a.Type, Unique: a.Unique, ReadOnly: a.ReadOnly, ResetRequired: a.ResetRequired,
			LowerBound: toInt64(a.LowerBound), UpperBound: toInt64(a.UpperBound), MinLength: toInt64(a.MinLength), MaxLength: toInt64(a.MaxLength)}
		for _, v := range a.Value {
			name := v.Name
			if name == "" {
				name = v.Display
			}
			if name != "" {
				s.AllowableValues = append(s.AllowableValues, name)
			}
		}
		out[a.Name] = s
	}
	return out
}

func toInt64(f *float64) *int64 {
	if f == nil {
		return nil
	}
	i := int64(*f)
	return &i
}

// registryURI finds the English location of registry id.
func registryURI(c *conn, id string) (string, error) {
	var root struct{ Registries *link }
	if err := c.getJSON("/redfish/v1/", &root); err != nil {
		return "", err
	}
	if root.Registries == nil || root.Registries.ID == "" {
		return "", nil
	}
	var col struct{ Members []link }
	if err := c.getJSON(root.Registries.ID, &col); err != nil {
		return "", err
	}
	for _, m := range col.Members {
		var f struct {
			ID       string `json:"Id"`
			Registry string `json:"Registry"`
			Location []struct {
				Language string `json:"Language"`
				URI      string `json:"Uri"`
			} `json:"Location"`
		}
		if err := c.getJSON(m.ID, &f); err != nil {
			continue
		}
		if f.ID != id && f.Registry != id {
			continue
		}
		for _, l := range f.Location {
			if l.Language == "en" || l.Language == "" {
				return l.URI, nil
			}
		}
	}
	return "", nil
}
