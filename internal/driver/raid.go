package driver

import "github.com/anvil-metal/anvil/internal/model"

// RAID is what a raid interface answers besides its steps (Ironic's
// RAIDInterface.validate_raid_config and get_logical_disk_properties): the
// check of a target RAID configuration before PUT /v1/nodes/{node}/states/raid
// stores it, and the logical disk properties it takes. no-raid's
// ValidateRAIDConfig answers an error wrapping ErrUnsupported (Ironic's
// UnsupportedDriverExtension); a malformed configuration answers an error
// whose text is Ironic's InvalidParameterValue message.
type RAID interface {
	ValidateRAIDConfig(n *model.Node, cfg model.JSON) error
	LogicalDiskProperties() map[string]string
}
