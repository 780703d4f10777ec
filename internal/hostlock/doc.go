// Package hostlock claims a conductor name on a database for the life of the
// process, so that two `anvil serve` processes with the same --host-id on the
// same database cannot both run: the second would "recover" the first one's
// locks and fail its running work. Ironic refuses a conductor whose hostname is
// registered and alive (ConductorAlreadyRegistered); Anvil goes one better and
// ties the claim to the process itself, so a crashed process (kill -9) frees
// the name at once and its restart recovers as before, while a live one keeps
// it however long ago it last heartbeated.
//
// On PostgreSQL the claim is a session advisory lock, keyed by the schema and
// the host name, held on a connection of its own: the server drops it when the
// process or its connection dies. On SQLite it is an flock(2) on a file beside
// the database (DB.conductor-HOST.lock), which the kernel drops when the
// process dies. An in-memory SQLite database is private to its process and
// needs no claim.
package hostlock
