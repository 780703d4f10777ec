package model

import "time"

// VolumeConnector is one of a node's initiators for boot from volume
// (Ironic's volume connector, API 1.32): a typed identifier such as an
// iSCSI IQN or a Fibre Channel WWPN. (Type, ConnectorID) is unique across
// every node.
type VolumeConnector struct {
	ID          int64  `json:"-"`
	Version     int64  `json:"-"`
	UUID        string `json:"uuid"`
	NodeUUID    string `json:"node_uuid"`
	Type        string `json:"type"`
	ConnectorID string `json:"connector_id"`
	Extra       JSON   `json:"extra,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// VolumeTarget is a volume a node boots from or attaches (Ironic's volume
// target, API 1.32). (NodeUUID, BootIndex) is unique.
type VolumeTarget struct {
	ID         int64  `json:"-"`
	Version    int64  `json:"-"`
	UUID       string `json:"uuid"`
	NodeUUID   string `json:"node_uuid"`
	VolumeType string `json:"volume_type"`
	VolumeID   string `json:"volume_id"`
	BootIndex  int64  `json:"boot_index"`
	// Properties are the volume's connection details (may hold secrets,
	// masked in the API's answers).
	Properties JSON `json:"properties,omitempty"`
	Extra      JSON `json:"extra,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}
