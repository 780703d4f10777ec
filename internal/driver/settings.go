package driver

import (
	"fmt"
	"strconv"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// BIOSSetting is one {name, value} of a bios.apply_configuration step's
// settings argument.
type BIOSSetting struct {
	Name  string
	Value any
}

// ParseBIOSSettings reads bios.apply_configuration's settings argument: a
// non-empty list of objects with a string name and a value.
func ParseBIOSSettings(raw any) ([]BIOSSetting, error) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("Invalid BIOS settings %s: a non-empty list of {'name': ..., 'value': ...} is required", pyrepr.Repr(raw))
	}
	out := make([]BIOSSetting, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		name, isStr := m["name"].(string)
		_, hasValue := m["value"]
		if !ok || !isStr || name == "" || !hasValue {
			return nil, fmt.Errorf("Invalid BIOS setting %s: it needs a name and a value", pyrepr.Repr(item))
		}
		out = append(out, BIOSSetting{Name: name, Value: m["value"]})
	}
	return out, nil
}

// SettingText is a BIOS setting's value as Ironic stores it: text (what
// Python's str gives), nil for null.
func SettingText(v any) *string {
	var s string
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		s = x
	case bool:
		s = pyrepr.Bool(x)
	case float64:
		if x == float64(int64(x)) {
			s = strconv.FormatInt(int64(x), 10)
		} else {
			s = strconv.FormatFloat(x, 'g', -1, 64)
		}
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	default:
		s = pyrepr.Str(x)
	}
	return &s
}

// BIOSFromSettings turns apply_configuration's settings into cached
// settings without schema (what a bios interface without hardware keeps).
func BIOSFromSettings(settings []BIOSSetting) []model.BIOSSetting {
	out := make([]model.BIOSSetting, 0, len(settings))
	for _, s := range settings {
		out = append(out, model.BIOSSetting{Name: s.Name, Value: SettingText(s.Value)})
	}
	return out
}
