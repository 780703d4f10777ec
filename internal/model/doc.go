// Package model holds Anvil's domain types: Node, Port, Portgroup,
// Allocation, Chassis, DeployTemplate, VolumeConnector, VolumeTarget,
// Conductor and HistoryEvent, with Ironic's field names. They carry no behaviour that needs
// I/O: the store persists them, the conductor changes them under a node's
// lock, and the API renders them per microversion. Empty strings stand for
// Ironic's null.
package model
