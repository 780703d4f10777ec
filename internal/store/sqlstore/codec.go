package sqlstore

import (
	"fmt"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// norm is the form every stored time takes: UTC, microsecond precision, no
// monotonic reading; the zero time stays zero.
func norm(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// normNode normalises every time of n in place.
func normNode(n *model.Node) {
	n.ProvisionUpdatedAt = norm(n.ProvisionUpdatedAt)
	n.InspectionStartedAt = norm(n.InspectionStartedAt)
	n.InspectionFinishedAt = norm(n.InspectionFinishedAt)
	n.CreatedAt = norm(n.CreatedAt)
	n.UpdatedAt = norm(n.UpdatedAt)
}

// timeArg encodes a time for a nullable column: the zero time is NULL.
func (s *Store) timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.d.EncodeTime(t)
}

// nullStr maps "" (Ironic's null) to NULL, for nullable unique columns.
func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// timeDest scans a timestamp column of any engine into *t: a time.Time, a
// TimeLayout (or RFC 3339) string, or NULL (the zero time).
type timeDest struct{ t *time.Time }

func (d timeDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.t = time.Time{}
		return nil
	case time.Time:
		*d.t = norm(v)
		return nil
	case string:
		return d.parse(v)
	case []byte:
		return d.parse(string(v))
	}
	return fmt.Errorf("cannot scan %T into a time", src)
}

func (d timeDest) parse(s string) error {
	if s == "" {
		*d.t = time.Time{}
		return nil
	}
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("bad stored time %q: %w", s, err)
		}
	}
	*d.t = norm(t)
	return nil
}

// uuidShaped reports whether s looks like a canonical UUID
// (8-4-4-4-12 hexadecimal digits); such idents are looked up by uuid, others
// by name.
func uuidShaped(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
