package model

import "time"

// InspectionRule is one of Ironic's inspection rules (API 1.96): when all
// its conditions hold on the data an inspection gathered, its actions run
// on the node. Rules run by descending priority (internal/inspectrule).
type InspectionRule struct {
	ID          int64  `json:"-"`
	Version     int64  `json:"-"`
	UUID        string `json:"uuid"`
	Description string `json:"description,omitempty"`
	// Priority orders the rules: higher first; 0-9999 for user rules.
	Priority int `json:"priority"`
	// Sensitive rules show null conditions and actions in the API.
	Sensitive bool `json:"sensitive"`
	// Phase is the inspection phase the rule runs in ("main").
	Phase string `json:"phase"`
	// Conditions and Actions are Ironic's {op, args, loop, multiple}
	// documents, validated on the way in.
	Conditions []JSON `json:"conditions"`
	Actions    []JSON `json:"actions"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}
