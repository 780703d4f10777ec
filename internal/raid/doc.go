// Package raid holds what every RAID interface shares, as Ironic's
// ironic/common/raid.py and the redfish RAID module do: the target RAID
// configuration schema and its validation with Ironic's error texts
// (Validate), the logical disk properties of GET
// /v1/drivers/{driver}/raid/logical_disk_properties, the filtering of a
// target configuration by root and non-root volumes, the node update after
// a configuration was applied (Apply), and the pure matching of logical
// disks to physical drives (Plan, Ironic's redfish _find_configuration).
//
// The schema is Ironic 21.4's raid_config_schema.json, embedded verbatim
// (schema.json; provenance in testdata/README.md). Validate does not run a
// general JSON Schema engine: it walks this one schema in the order
// jsonschema's Draft 4 validator does and picks the reported error with
// jsonschema's best_match rules, so messages match Ironic's word for word
// (testdata/ironic_validate_cases.json holds what Ironic answered).
//
// Invariants: nothing here does I/O; Plan never changes its input.
package raid
