package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
)

// nodeColumns maps the node fields that have a column of their own (API
// name → column and how its value, read as text, sets the field), for the
// lists that need only those (store.NodeQuery.Only). A column holds what
// nodeArgs wrote from the same node as its JSON (reservation: what the lock
// statements wrote), so a field read from it equals the decoded one.
// Read-only.
var nodeColumns = map[string]struct {
	col string
	set func(n *model.Node, v string)
}{
	"uuid":                   {"uuid", func(n *model.Node, v string) { n.UUID = v }},
	"name":                   {"name", func(n *model.Node, v string) { n.Name = v }},
	"instance_uuid":          {"instance_uuid", func(n *model.Node, v string) { n.InstanceUUID = v }},
	"driver":                 {"driver", func(n *model.Node, v string) { n.Driver = v }},
	"provision_state":        {"provision_state", func(n *model.Node, v string) { n.ProvisionState = v }},
	"target_provision_state": {"target_provision_state", func(n *model.Node, v string) { n.TargetProvisionState = v }},
	"power_state":            {"power_state", func(n *model.Node, v string) { n.PowerState = v }},
	"maintenance":            {"maintenance", func(n *model.Node, v string) { n.Maintenance = v == "1" || v == "true" }},
	"resource_class":         {"resource_class", func(n *model.Node, v string) { n.ResourceClass = v }},
	"fault":                  {"fault", func(n *model.Node, v string) { n.Fault = v }},
	"owner":                  {"owner", func(n *model.Node, v string) { n.Owner = v }},
	"lessee":                 {"lessee", func(n *model.Node, v string) { n.Lessee = v }},
	"conductor_group":        {"conductor_group", func(n *model.Node, v string) { n.ConductorGroup = v }},
	"reservation":            {"reservation", func(n *model.Node, v string) { n.Reservation = v }},
	"chassis_uuid":           {"chassis_uuid", func(n *model.Node, v string) { n.ChassisUUID = v }},
}

// onlyColumns returns the select list and setters for fields when each of
// them has a column (always with id, version and uuid first), or ok false.
func onlyColumns(fields []string) (sel string, set []func(*model.Node, string), ok bool) {
	if len(fields) == 0 {
		return "", nil, false
	}
	cols := []string{"id", "version", "uuid"}
	set = []func(*model.Node, string){nil, nil, nodeColumns["uuid"].set}
	for _, f := range fields {
		c, found := nodeColumns[f]
		if !found {
			return "", nil, false
		}
		if f == "uuid" {
			continue
		}
		cols = append(cols, c.col)
		set = append(set, c.set)
	}
	return strings.Join(cols, ", "), set, true
}

// queryNodeColumns runs query, which selects the columns onlyColumns gave,
// and builds a node of those fields from each row.
func (s *Store) queryNodeColumns(ctx context.Context, query string, args []any, set []func(*model.Node, string), limit int) ([]*model.Node, error) {
	rows, err := s.reader().query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	nodes := make([]*model.Node, 0, max(min(limit, 1000), 16))
	vals := make([]any, len(set))
	dest := make([]any, len(set))
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		n := &model.Node{}
		for i, v := range vals {
			switch i {
			case 0:
				n.ID = asInt(v)
			case 1:
				n.Version = asInt(v)
			default:
				set[i](n, asText(v))
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, rows.Err()
}

// asText is a column value as text: NULL is "", booleans and integers as
// the drivers give them ("true", "1").
func asText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case bool:
		if v {
			return "true"
		}
		return "false"
	case int64:
		return fmt.Sprint(v)
	}
	return fmt.Sprint(v)
}

func asInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int:
		return int64(v)
	}
	return 0
}
