package api

import (
	"fmt"
	"math/big"
	"net/http"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
)

// Microversion range of the API: 1.MinMinor through 1.MaxMinor.
const (
	MinMinor = 1
	MaxMinor = 115
)

// Header names of Ironic's microversion protocol.
const (
	hdrLegacyVersion = "X-OpenStack-Ironic-API-Version"
	hdrStdVersion    = "OpenStack-API-Version"
	hdrMinVersion    = "X-OpenStack-Ironic-API-Minimum-Version"
	hdrMaxVersion    = "X-OpenStack-Ironic-API-Maximum-Version"
	hdrRequestID     = "Openstack-Request-Id"
	// hdrXRequestID mirrors hdrRequestID (Ironic 1.107, oslo's request id
	// middleware); like Ironic, it is on every response, whatever the
	// requested version.
	hdrXRequestID = "X-Openstack-Request-Id"
	serviceType   = "baremetal"
)

// minorDotJSON is the version from which a ".json" ending of a path is
// part of the resource name (Ironic's MINOR_91_DOT_JSON).
const minorDotJSON = 91

var (
	minVersionString = fmt.Sprintf("1.%d", MinMinor)
	maxVersionString = fmt.Sprintf("1.%d", MaxMinor)
)

// negotiate picks the request's microversion from its headers, as Ironic
// does: the standard "OpenStack-API-Version: baremetal 1.N" header wins over
// the legacy X-OpenStack-Ironic-API-Version; no header means the minimum;
// "latest" means the maximum. A malformed value or a version outside the
// supported range is a 406 with Ironic's wording.
func negotiate(h http.Header) (int, error) {
	raw, ok := standardVersion(h)
	if !ok {
		raw = strings.Join(h.Values(hdrLegacyVersion), ",")
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return MinMinor, nil
	}
	if strings.EqualFold(raw, "latest") {
		return MaxMinor, nil
	}
	major, minor, ok := parseVersion(raw)
	if !ok {
		return 0, fault.New(fault.NotAcceptable, "Invalid value for %s header", hdrLegacyVersion)
	}
	shown := major.String() + "." + minor.String()
	if major.Cmp(big.NewInt(1)) != 0 {
		return 0, fault.New(fault.NotAcceptable,
			"Mutually exclusive versions requested. Version %s requested but not supported by this service. The supported version range is: [%s, %s].",
			shown, minVersionString, maxVersionString)
	}
	if !minor.IsInt64() || minor.Int64() < MinMinor || minor.Int64() > MaxMinor {
		return 0, fault.New(fault.NotAcceptable,
			"Version %s was requested but the minor version is not supported by this service. The supported version range is: [%s, %s].",
			shown, minVersionString, maxVersionString).AsRouting()
	}
	return int(minor.Int64()), nil
}

// standardVersion finds the baremetal entry of the OpenStack-API-Version
// header (several header lines count as one comma-separated list).
func standardVersion(h http.Header) (string, bool) {
	for _, line := range h.Values(hdrStdVersion) {
		for _, item := range strings.Split(line, ",") {
			fields := strings.Fields(item)
			if len(fields) < 2 || !strings.EqualFold(fields[0], serviceType) {
				continue
			}
			return strings.Join(fields[1:], " "), true
		}
	}
	return "", false
}

// parseVersion splits "MAJOR.MINOR" into two integers the way Python's
// int() reads them (optional sign, surrounding blanks, any length).
func parseVersion(s string) (major, minor *big.Int, ok bool) {
	a, b, found := strings.Cut(s, ".")
	if !found {
		return nil, nil, false
	}
	if major, ok = parsePyInt(a); !ok {
		return nil, nil, false
	}
	if minor, ok = parsePyInt(b); !ok {
		return nil, nil, false
	}
	return major, minor, true
}

// parsePyInt reads a decimal integer as Python's int() does for ASCII input:
// surrounding whitespace and one leading sign allowed, digits required.
func parsePyInt(s string) (*big.Int, bool) {
	s = strings.TrimSpace(s)
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" || len(digits) > 4096 {
		return nil, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	n, ok := new(big.Int).SetString(s, 10)
	return n, ok
}

// versionString renders a minor version as Ironic prints it.
func versionString(minor int) string { return fmt.Sprintf("1.%d", minor) }

// resourceAllowed gates a resource added at 1.minor, as Ironic's
// controllers do below it: 404 to read, 405 to write, with text.
func (rc *call) resourceAllowed(minor int, text string) error {
	return rc.versionGate(minor, text, rc.r.Method != "GET")
}

// versionGate is the answer below 1.minor to a read or a write of a
// resource (webob's, like a routing error): 404 to read, 405 to write.
func (rc *call) versionGate(minor int, text string, write bool) error {
	if rc.minor >= minor {
		return nil
	}
	if write {
		return fault.New(fault.NotAllowed, "%s", text).AsRouting()
	}
	return fault.New(fault.NotFound, "%s", text).AsRouting()
}
