package ring

import (
	"fmt"
	"strings"
)

// maxGroupLen is the longest conductor_group Ironic accepts.
const maxGroupLen = 255

// CheckGroup validates a conductor_group as Ironic does: characters from
// [a-zA-Z0-9_.-] (ironic.common.utils.validate_conductor_group), at most
// 255 of them (the column's length); "" is the default group.
func CheckGroup(g string) error {
	if len(g) > maxGroupLen {
		return fmt.Errorf("conductor group %q is longer than %d characters", g, maxGroupLen)
	}
	if i := strings.IndexFunc(g, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}); i >= 0 {
		return fmt.Errorf("conductor group %q has the character %q; only letters, digits, '_', '-' and '.' are allowed", g, g[i])
	}
	return nil
}
