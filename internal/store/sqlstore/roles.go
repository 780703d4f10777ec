package sqlstore

import "github.com/anvil-metal/anvil/internal/store"

// The role stores: each is Store's methods of one store.Store role, over
// the same pools, statements and cache. They hold the Store rather than
// embed it, so that none has another role's methods or Store's own.
type (
	nodeStore           struct{ s *Store }
	portStore           struct{ s *Store }
	allocationStore     struct{ s *Store }
	conductorStore      struct{ s *Store }
	chassisStore        struct{ s *Store }
	templateStore       struct{ s *Store }
	runbookStore        struct{ s *Store }
	inspectionRuleStore struct{ s *Store }
	volumeStore         struct{ s *Store }
	settingsStore       struct{ s *Store }
	sessionStore        struct{ s *Store }
	diagnosisStore      struct{ s *Store }
	recordStore         struct{ s *Store }
)

// Nodes implements store.Store.
func (s *Store) Nodes() store.NodeStore { return nodeStore{s} }

// Ports implements store.Store.
func (s *Store) Ports() store.PortStore { return portStore{s} }

// Allocations implements store.Store.
func (s *Store) Allocations() store.AllocationStore { return allocationStore{s} }

// Conductors implements store.Store.
func (s *Store) Conductors() store.ConductorStore { return conductorStore{s} }

// Chassis implements store.Store.
func (s *Store) Chassis() store.ChassisStore { return chassisStore{s} }

// DeployTemplates implements store.Store.
func (s *Store) DeployTemplates() store.DeployTemplateStore { return templateStore{s} }

// Runbooks implements store.Store.
func (s *Store) Runbooks() store.RunbookStore { return runbookStore{s} }

// InspectionRules implements store.Store.
func (s *Store) InspectionRules() store.InspectionRuleStore { return inspectionRuleStore{s} }

// Volumes implements store.Store.
func (s *Store) Volumes() store.VolumeStore { return volumeStore{s} }

// Settings implements store.Store.
func (s *Store) Settings() store.SettingsStore { return settingsStore{s} }

// Sessions implements store.Store.
func (s *Store) Sessions() store.SessionStore { return sessionStore{s} }

// Diagnoses implements store.Store.
func (s *Store) Diagnoses() store.DiagnosisStore { return diagnosisStore{s} }

// Records implements store.Store.
func (s *Store) Records() store.RecordStore { return recordStore{s} }
