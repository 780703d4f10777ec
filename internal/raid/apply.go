package raid

import (
	"fmt"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Filter is Ironic's filter_target_raid_config: the node's target
// configuration without the root volume (createRoot false) or without the
// others (createNonRoot false). Errors are Ironic's MissingParameterValue
// texts.
func Filter(n *model.Node, createRoot, createNonRoot bool) (map[string]any, error) {
	if len(n.TargetRaidConfig) == 0 {
		return nil, &Error{Msg: fmt.Sprintf("Node %s has no target RAID configuration.", n.UUID)}
	}
	lds, _ := n.TargetRaidConfig["logical_disks"].([]any)
	var kept []any
	var skipped []string
	if !createRoot {
		skipped = append(skipped, "skipping root volume")
	}
	if !createNonRoot {
		skipped = append(skipped, "skipping non-root volumes")
	}
	for _, l := range lds {
		root, _ := l.(map[string]any)["is_root_volume"].(bool)
		if (root && createRoot) || (!root && createNonRoot) {
			kept = append(kept, l)
		}
	}
	if len(kept) == 0 {
		return nil, &Error{Msg: fmt.Sprintf("Node %s has empty target RAID configuration after %s.", n.UUID, strings.Join(skipped, " and "))}
	}
	out := map[string]any{}
	for k, v := range n.TargetRaidConfig {
		out[k] = v
	}
	out["logical_disks"] = kept
	return out, nil
}

// Apply records the RAID configuration now on the node (Ironic's
// update_raid_info): raid_config gets the logical disks and last_updated;
// a root volume sets properties local_gb (unless "MAX"), root_device (from
// its root_device_hint) and the raid_level capability.
func Apply(n *model.Node, logicalDisks []map[string]any, now time.Time) error {
	list := make([]any, len(logicalDisks))
	var root map[string]any
	roots := 0
	for i, l := range logicalDisks {
		list[i] = l
		if b, _ := l["is_root_volume"].(bool); b {
			root = l
			roots++
		}
	}
	if roots > 1 {
		return &Error{Msg: fmt.Sprintf("Raid config cannot have more than one root volume. %d root volumes were specified", roots)}
	}
	n.RaidConfig = model.JSON{"logical_disks": list, "last_updated": pyDatetime(now)}
	if root == nil {
		return nil
	}
	if n.Properties == nil {
		n.Properties = model.JSON{}
	}
	if s, _ := root["size_gb"].(string); s != "MAX" {
		n.Properties["local_gb"] = root["size_gb"]
	}
	if hint, ok := root["root_device_hint"]; ok {
		n.Properties["root_device"] = hint
	}
	caps, _ := n.Properties["capabilities"].(string)
	updated, err := updatedCapabilities(caps, "raid_level", fmt.Sprint(root["raid_level"]))
	if err != nil {
		return err
	}
	n.Properties["capabilities"] = updated
	return nil
}

// updatedCapabilities is Ironic's get_updated_capabilities for one key:
// "k1:v1,k2:v2" with key set, in the order first seen.
func updatedCapabilities(caps, key, value string) (string, error) {
	var keys []string
	vals := map[string]string{}
	if caps != "" {
		for _, kv := range strings.Split(caps, ",") {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				return "", &Error{Msg: fmt.Sprintf("Invalid capabilities string '%s'.", caps)}
			}
			if _, seen := vals[k]; !seen {
				keys = append(keys, k)
			}
			vals[k] = v
		}
	}
	if _, seen := vals[key]; !seen {
		keys = append(keys, key)
	}
	vals[key] = value
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + vals[k]
	}
	return strings.Join(parts, ","), nil
}

// pyDatetime is Python's str() of a naive UTC datetime (microseconds only
// when non-zero).
func pyDatetime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("2006-01-02 15:04:05.000000")
}

// BoolArg reads an optional boolean argument of a RAID step
// (create_root_volume, create_nonroot_volumes, delete_existing).
func BoolArg(args map[string]any, name string, def bool) (bool, error) {
	switch v := args[name].(type) {
	case nil:
		return def, nil
	case bool:
		return v, nil
	}
	return def, &Error{Msg: fmt.Sprintf("step argument %s must be a boolean, not %s", name, pyrepr.Repr(args[name]))}
}
