package conductor

import (
	"github.com/anvil-metal/anvil/internal/store"
)

// Store is the part of the storage contract the conductor uses: every role
// store but the dashboard's sessions. store.Store (SQLite and PostgreSQL)
// satisfies it; each role store has the meaning and errors store.Store
// documents.
type Store interface {
	Nodes() store.NodeStore
	Ports() store.PortStore
	Allocations() store.AllocationStore
	Conductors() store.ConductorStore
	Settings() store.SettingsStore
	DeployTemplates() store.DeployTemplateStore
	Runbooks() store.RunbookStore
	Chassis() store.ChassisStore
	Volumes() store.VolumeStore
	InspectionRules() store.InspectionRuleStore
	Diagnoses() store.DiagnosisStore
}
