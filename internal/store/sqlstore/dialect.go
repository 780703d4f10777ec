package sqlstore

import (
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// Dialect is what differs between SQL engines. The engine packages fill it in;
// queries in this package are written with ? placeholders.
type Dialect struct {
	// Name names the engine in error messages ("sqlite", "postgres").
	Name string
	// NumberedParams turns ? placeholders into $1, $2, ... (PostgreSQL).
	NumberedParams bool
	// ZeroTime is the SQL expression a NULL timestamp sorts as; it must sort
	// before every stored time.
	ZeroTime string
	// EncodeTime turns a UTC, microsecond-truncated time into a query argument.
	EncodeTime func(time.Time) any
	// Classify says whether err is a constraint violation, and which.
	Classify func(err error) Violation
	// Migrations holds NNNN_name.up.sql and NNNN_name.down.sql at its root.
	Migrations fs.FS
	// MigrationLock, if set, runs first in the migration transaction, to
	// serialise processes migrating the same database at once.
	MigrationLock string
}

// ViolationKind is the kind of constraint a write violated.
type ViolationKind int

// Constraint violations a Dialect recognises.
const (
	NoViolation ViolationKind = iota
	UniqueViolation
	ForeignKeyViolation
)

// Violation describes a constraint violation: Column is the column of a
// unique constraint ("uuid", "name", "address", ...).
type Violation struct {
	Kind   ViolationKind
	Column string
}

// TimeLayout is the text encoding of times in engines without a timestamp type
// (SQLite): fixed width, so text order is time order.
const TimeLayout = "2006-01-02 15:04:05.000000"

// EncodeTimeText encodes t with TimeLayout; it suits Dialect.EncodeTime.
func EncodeTimeText(t time.Time) any { return t.UTC().Format(TimeLayout) }

// rebind rewrites ? placeholders for the dialect. Queries in this package
// never hold a ? inside a literal.
func (d *Dialect) rebind(q string) string {
	if !d.NumberedParams || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}
