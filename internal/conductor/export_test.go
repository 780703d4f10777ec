package conductor

// SyncPage is syncPage for the tests of package conductor_test.
const SyncPage = syncPage
