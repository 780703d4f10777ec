// Package storeopen opens the store a database string names: PostgreSQL for
// a postgres:// or postgresql:// URL, else the SQLite file at that path. It
// is the one place that knows both engines, so neither the store contract
// nor the engine packages import each other.
package storeopen
