package ipmi

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/anvil-metal/anvil/internal/model"
)

// Driver_info keys the ipmi hardware type reads (Ironic's names).
const (
	KeyAddress      = "ipmi_address"
	KeyPort         = "ipmi_port"
	KeyUsername     = "ipmi_username"
	KeyPassword     = "ipmi_password"
	KeyCipherSuite  = "ipmi_cipher_suite"
	KeyPrivLevel    = "ipmi_priv_level"
	KeyTerminalPort = "ipmi_terminal_port"
)

// Properties describes the driver_info keys, for GET /v1/drivers/ipmi/properties.
func Properties() map[string]string {
	return map[string]string{
		KeyAddress:      "IP address or hostname of the node. Required.",
		KeyPort:         "Remote IPMI RMCP port. Optional.",
		KeyUsername:     "username; default is NULL user. Optional.",
		KeyPassword:     "password. Optional.",
		KeyCipherSuite:  "The number of a cipher suite to use. Anvil uses 3 (HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128) when unset. Optional.",
		KeyPrivLevel:    "privilege level; default is ADMINISTRATOR. One of ADMINISTRATOR, CALLBACK, OPERATOR, USER. Optional.",
		KeyTerminalPort: "node's UDP port to connect to. Only required for console access.",
	}
}

// info is a node's parsed driver_info.
type info struct {
	address     string
	port        int
	username    string
	password    string
	cipherSuite types.CipherSuiteID
	privLevel   types.PrivilegeLevel
}

// target is host:port, the key of per-BMC throttling.
func (in info) target() string { return net.JoinHostPort(in.address, strconv.Itoa(in.port)) }

var privLevels = map[string]types.PrivilegeLevel{
	"ADMINISTRATOR": types.PrivilegeLevelAdministrator,
	"CALLBACK":      types.PrivilegeLevelCallback,
	"OPERATOR":      types.PrivilegeLevelOperator,
	"USER":          types.PrivilegeLevelUser,
}

// parseInfo reads and checks the node's driver_info without touching the BMC.
func parseInfo(n *model.Node) (info, error) {
	di := n.DriverInfo
	in := info{port: 623, cipherSuite: types.CipherSuiteID3, privLevel: types.PrivilegeLevelAdministrator}
	addr, _ := di[KeyAddress].(string)
	in.address = strings.TrimSpace(addr)
	if in.address == "" {
		return info{}, fmt.Errorf("Missing the following IPMI credentials in node's driver_info: ['%s'].", KeyAddress)
	}
	var problems []string
	if _, ok := di[KeyAddress].(string); !ok {
		problems = append(problems, KeyAddress+" must be a string")
	}
	if strings.ContainsAny(in.address, " /") {
		problems = append(problems, fmt.Sprintf("%s %q is not a host name or IP address", KeyAddress, in.address))
	}
	if v, ok := di[KeyUsername]; ok && v != nil {
		s, isStr := v.(string)
		if !isStr || len(s) > 16 {
			problems = append(problems, KeyUsername+" must be a string of at most 16 characters")
		}
		in.username = s
	}
	if v, ok := di[KeyPassword]; ok && v != nil {
		s, isStr := v.(string)
		if !isStr || len(s) > 20 {
			problems = append(problems, KeyPassword+" must be a string of at most 20 characters")
		}
		in.password = s
	}
	if p, ok, err := intKey(di, KeyPort, 1, 65535); err != nil {
		problems = append(problems, err.Error())
	} else if ok {
		in.port = p
	}
	if cs, ok, err := intKey(di, KeyCipherSuite, 0, 17); err != nil {
		problems = append(problems, err.Error())
	} else if ok {
		in.cipherSuite = types.CipherSuiteID(cs)
	}
	if _, _, err := intKey(di, KeyTerminalPort, 1, 65535); err != nil {
		problems = append(problems, err.Error())
	}
	if v, ok := di[KeyPrivLevel]; ok && v != nil {
		s, _ := v.(string)
		lvl, known := privLevels[strings.ToUpper(strings.TrimSpace(s))]
		if !known {
			problems = append(problems, fmt.Sprintf("Invalid privilege level value:%v, the valid value can be one of ADMINISTRATOR, CALLBACK, OPERATOR, USER", v))
		}
		in.privLevel = lvl
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return info{}, fmt.Errorf("Invalid IPMI driver_info of node %s: %s", n.UUID, strings.Join(problems, "; "))
	}
	return in, nil
}

// intKey reads an integer (JSON number or decimal string) in [lo, hi].
func intKey(di model.JSON, key string, lo, hi int) (int, bool, error) {
	v, ok := di[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	var n int
	switch x := v.(type) {
	case float64:
		if x != float64(int(x)) {
			return 0, false, fmt.Errorf("%s %v is not an integer", key, x)
		}
		n = int(x)
	case int:
		n = x
	case string:
		p, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, false, fmt.Errorf("%s %q is not an integer", key, x)
		}
		n = p
	default:
		return 0, false, fmt.Errorf("%s must be an integer", key)
	}
	if n < lo || n > hi {
		return 0, false, fmt.Errorf("%s %d is out of range [%d, %d]", key, n, lo, hi)
	}
	return n, true, nil
}
