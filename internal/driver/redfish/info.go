package redfish

import (
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
)

// Driver_info keys the redfish hardware type reads (Ironic's names).
const (
	KeyAddress  = "redfish_address"
	KeySystemID = "redfish_system_id"
	KeyUsername = "redfish_username"
	KeyPassword = "redfish_password"
	KeyVerifyCA = "redfish_verify_ca"
	KeyAuthType = "redfish_auth_type"
)

// Properties describes the driver_info keys, for GET /v1/drivers/redfish/properties.
func Properties() map[string]string {
	return map[string]string{
		KeyAddress:    "The URL address to the Redfish controller. It must include the authority portion of the URL, and can optionally include the scheme. If the scheme is missing, https is assumed. For example: https://mgmt.vendor.com. Required.",
		KeySystemID:   "The canonical path to the ComputerSystem resource that the driver will interact with. It should include the root service, version and the unique resource path to the ComputerSystem. This property is only required if target BMC manages more than one ComputerSystem. Otherwise it is optional.",
		KeyUsername:   "User account with admin/server-profile access privilege. Although this property is not mandatory it's highly recommended to set a username. Optional",
		KeyPassword:   "User account password. Although this property is not mandatory, it's highly recommended to set a password. Optional",
		KeyVerifyCA:   "Either a Boolean value, a path to a CA_BUNDLE file or directory with certificates of trusted CAs. If set to True the driver will verify the host certificates; if False the driver will ignore verifying the SSL certificate. If it's a path the driver will use the specified certificate or one of the certificates in the directory. Defaults to True. Optional",
		KeyAuthType:   "Redfish HTTP client authentication method. One of \"basic\", \"session\" or \"auto\". Defaults to \"auto\". Optional",
		KeySSHHostKey: "The BMC's SSH host key (as ssh-keyscan prints it) or its SHA256: fingerprint, for the redfish-serial console of a system whose serial console is SSH only. Optional",
	}
}

// Auth types.
const (
	AuthBasic   = "basic"
	AuthSession = "session"
	AuthAuto    = "auto"
)

// info is a node's parsed driver_info.
type info struct {
	address  string // scheme://host[:port], no trailing slash
	systemID string // /redfish/v1/Systems/<id>, or "" for "the only system"
	username string
	password string
	verify   bool   // verify the BMC's TLS certificate
	caPath   string // CA bundle file or directory ("" = system roots)
	authType string
	node     string // the node's UUID, under which calls are recorded
}

// parseInfo reads and checks the node's driver_info without touching hardware.
// Its errors name every missing or malformed key and never a password.
func parseInfo(n *model.Node) (info, error) {
	di := n.DriverInfo
	var missing []string
	str := func(k string) (string, error) {
		switch v := di[k].(type) {
		case nil:
			return "", nil
		case string:
			return strings.TrimSpace(v), nil
		default:
			return "", fmt.Errorf("%s must be a string", k)
		}
	}
	var problems []string
	get := func(k string) string {
		s, err := str(k)
		if err != nil {
			problems = append(problems, err.Error())
		}
		return s
	}
	in := info{verify: true, authType: AuthAuto, node: n.UUID}
	addr := get(KeyAddress)
	if s, isStr := di[KeyAddress].(string); di[KeyAddress] == nil || isStr && strings.TrimSpace(s) == "" {
		missing = append(missing, KeyAddress)
	}
	in.username = get(KeyUsername)
	if pw, ok := di[KeyPassword]; ok && pw != nil {
		s, isStr := pw.(string)
		if !isStr {
			problems = append(problems, KeyPassword+" must be a string")
		}
		in.password = s
	}
	if len(missing) > 0 {
		return info{}, fmt.Errorf("Missing the following Redfish properties in node %s driver_info: %s", n.UUID, strings.Join(missing, ", "))
	}
	if addr != "" {
		a, err := parseAddress(addr)
		if err != nil {
			problems = append(problems, err.Error())
		}
		in.address = a
	}
	if sid := get(KeySystemID); sid != "" {
		p, err := parseSystemID(sid)
		if err != nil {
			problems = append(problems, err.Error())
		}
		in.systemID = p
	}
	if at := get(KeyAuthType); at != "" {
		switch strings.ToLower(at) {
		case AuthBasic, AuthSession, AuthAuto:
			in.authType = strings.ToLower(at)
		default:
			problems = append(problems, fmt.Sprintf("Invalid value %q set in driver_info/%s on node %s. The value should be one of %q, %q or %q",
				at, KeyAuthType, n.UUID, AuthBasic, AuthSession, AuthAuto))
		}
	}
	if v, ok := di[KeyVerifyCA]; ok && v != nil {
		verify, ca, err := parseVerifyCA(v)
		if err != nil {
			problems = append(problems, err.Error())
		}
		in.verify, in.caPath = verify, ca
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return info{}, fmt.Errorf("Invalid Redfish driver_info of node %s: %s", n.UUID, strings.Join(problems, "; "))
	}
	return in, nil
}

// parseAddress accepts host, host:port or a URL with scheme http or https and
// no credentials, path, query or fragment. No scheme means https (Ironic).
func parseAddress(s string) (string, error) {
	raw := s
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%s %q is not a valid URL or host", KeyAddress, raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%s %q must use http or https", KeyAddress, raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("%s must not carry credentials; use %s and %s", KeyAddress, KeyUsername, KeyPassword)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s %q must be scheme://host[:port] without a path", KeyAddress, raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%s %q has an invalid port", KeyAddress, raw)
		}
	}
	return u.Scheme + "://" + u.Host, nil
}

// parseSystemID accepts a path (/redfish/v1/Systems/X) or a bare id (X).
func parseSystemID(s string) (string, error) {
	if strings.ContainsAny(s, " ?#") {
		return "", fmt.Errorf("%s %q is not a resource path", KeySystemID, s)
	}
	if !strings.HasPrefix(s, "/") {
		if strings.Contains(s, "/") {
			return "", fmt.Errorf("%s %q is neither a path starting with / nor a system id", KeySystemID, s)
		}
		return "/redfish/v1/Systems/" + s, nil
	}
	return strings.TrimRight(s, "/"), nil
}

// parseVerifyCA reads a boolean (or its string spelling) or a CA bundle path.
func parseVerifyCA(v any) (bool, string, error) {
	switch x := v.(type) {
	case bool:
		return x, "", nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "1", "on", "y", "t":
			return true, "", nil
		case "false", "no", "0", "off", "n", "f":
			return false, "", nil
		}
		if _, err := os.Stat(x); err != nil {
			return true, "", fmt.Errorf("%s %q is neither a boolean nor an existing file or directory", KeyVerifyCA, x)
		}
		return true, x, nil
	}
	return true, "", fmt.Errorf("%s must be a boolean or a path", KeyVerifyCA)
}
