package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
)

// CmdlinePath is where the kernel publishes its command line.
const CmdlinePath = "/proc/cmdline"

// Cmdline is the agent's settings as found on a kernel command line, under
// IPA's parameter names (ironic_python_agent/config.py) plus a few of
// Anvil's own (anvil.*). Zero values mean "not given".
type Cmdline struct {
	APIURL            string        // ipa-api-url (the first of a comma-separated list)
	BootMAC           string        // BOOTIF, normalised to aa:bb:cc:dd:ee:ff
	AdvertiseHost     string        // ipa-advertise-host
	AdvertisePort     int           // ipa-advertise-port
	AdvertiseProtocol string        // ipa-advertise-protocol (http)
	ListenHost        string        // ipa-listen-host
	ListenPort        int           // ipa-listen-port
	Insecure          bool          // ipa-insecure: skip TLS verification of the API
	Debug             bool          // ipa-debug
	MinDiskSize       int64         // anvil.min-disk-size: smallest install disk (bytes)
	HeartbeatInterval time.Duration // anvil.heartbeat-interval: fixed heartbeat interval
	// AgentToken is ipa-agent-token: the token Ironic pregenerates for
	// virtual media boots and puts on the ISO's command line; its lookup
	// then answers the token masked. Never logged.
	AgentToken string
	Params     map[string]string
}

// ReadCmdline reads and parses a kernel command line file (normally
// CmdlinePath). A missing file is an empty command line. Malformed values
// are reported in the error while the others are still returned, so that a
// ramdisk agent can warn and go on.
func ReadCmdline(path string) (Cmdline, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Cmdline{Params: map[string]string{}}, nil
	}
	if err != nil {
		return Cmdline{Params: map[string]string{}}, fmt.Errorf("agent: read %s: %w", path, err)
	}
	c, err := ParseCmdline(string(b))
	if err != nil {
		return c, fmt.Errorf("agent: %s: %w", path, err)
	}
	return c, nil
}

// ParseCmdline splits s on white space into key=value words as IPA does
// (utils._read_params_from_file: words without "=" are skipped, a later
// key wins) and reads the agent's settings from them. A bare ipa-insecure or
// ipa-debug word counts as true.
func ParseCmdline(s string) (Cmdline, error) {
	c := Cmdline{Params: map[string]string{}}
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			if w == "ipa-insecure" || w == "ipa-debug" {
				c.Params[w] = "1"
			}
			continue
		}
		c.Params[k] = v
	}
	p := c.Params
	var errs []error
	if v := p["ipa-api-url"]; v != "" {
		c.APIURL, _, _ = strings.Cut(v, ",")
		if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ipa-api-url=%s: not an http(s) URL", v))
			c.APIURL = ""
		}
	}
	if v := p["BOOTIF"]; v != "" {
		mac, err := NormalizeBootMAC(v)
		if err != nil {
			errs = append(errs, err)
		}
		c.BootMAC = mac
	}
	c.AdvertiseHost, c.ListenHost = p["ipa-advertise-host"], p["ipa-listen-host"]
	c.AgentToken = p["ipa-agent-token"]
	switch v := p["ipa-advertise-protocol"]; v {
	case "", "http", "https":
		c.AdvertiseProtocol = v
	default:
		errs = append(errs, fmt.Errorf("ipa-advertise-protocol=%s: want http or https", v))
	}
	port := func(key string, dst *int) {
		if v := p[key]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				errs = append(errs, fmt.Errorf("%s=%s: not a port number", key, v))
				return
			}
			*dst = n
		}
	}
	port("ipa-advertise-port", &c.AdvertisePort)
	port("ipa-listen-port", &c.ListenPort)
	boolean := func(key string, dst *bool) {
		if v, ok := p[key]; ok {
			b, err := parseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%s: %w", key, v, err))
				return
			}
			*dst = b
		}
	}
	boolean("ipa-insecure", &c.Insecure)
	boolean("ipa-debug", &c.Debug)
	if v := p["anvil.min-disk-size"]; v != "" {
		n, err := parseSize(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("anvil.min-disk-size=%s: %w", v, err))
			n = 0
		}
		c.MinDiskSize = n
	}
	if v := p["anvil.heartbeat-interval"]; v != "" {
		d, err := time.ParseDuration(v)
		if n, nerr := strconv.ParseFloat(v, 64); nerr == nil {
			d, err = time.Duration(n*float64(time.Second)), nil
		}
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("anvil.heartbeat-interval=%s: not a positive duration", v))
			d = 0
		}
		c.HeartbeatInterval = d
	}
	return c, errors.Join(errs...) // a malformed value is left zero
}

// NormalizeBootMAC turns BOOTIF's pxelinux form (01-aa-bb-cc-dd-ee-ff, the
// leading hardware type dropped) or a colon form into aa:bb:cc:dd:ee:ff.
func NormalizeBootMAC(v string) (string, error) {
	mac := v
	if strings.Contains(mac, "-") {
		_, mac, _ = strings.Cut(mac, "-")
		mac = strings.ReplaceAll(mac, "-", ":")
	}
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return "", fmt.Errorf("BOOTIF=%s: not a MAC address", v)
	}
	return hw.String(), nil
}

// parseBool accepts oslo's strutils.bool_from_string spellings.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "t", "true", "on", "y", "yes":
		return true, nil
	case "0", "f", "false", "off", "n", "no", "":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// parseSize reads bytes with an optional binary unit: 4294967296, 4G, 4GiB,
// 64M, 64MiB, 512K.
func parseSize(v string) (int64, error) {
	num := strings.TrimRight(v, "KMGTiB")
	mult := map[string]int64{"": 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20,
		"G": 1 << 30, "GiB": 1 << 30, "T": 1 << 40, "TiB": 1 << 40}[v[len(num):]]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || mult == 0 || n < 0 {
		return 0, errors.New("not a size (bytes, or with K, M, G, T, KiB, MiB, GiB, TiB)")
	}
	return n * mult, nil
}

// ramdisk reports whether the command line configures an agent (it names
// the API), i.e. the agent runs in a deploy ramdisk.
func (c Cmdline) ramdisk() bool { return c.APIURL != "" }

// Apply fills in cfg from the command line wherever explicit (the anvil
// agent flag names given on the command line: "api-url", "mac", "listen",
// "advertise-url", "heartbeat-interval") says no flag was given. In a ramdisk
// (ipa-api-url present) the command API listens on every address (IPA's
// ipa-listen-host default) and, without ipa-advertise-host, advertises the
// local address that routes to the API, found within ctx. Without --disk the
// install disk is chosen as IPA does (InstallDisk).
func (c Cmdline) Apply(ctx context.Context, cfg *Config, explicit func(flag string) bool) error {
	if !explicit("api-url") && c.APIURL != "" {
		cfg.APIURL = c.APIURL
	}
	if !explicit("mac") && c.BootMAC != "" {
		cfg.MACs = append([]string{c.BootMAC}, without(systemMACs(cfg.RootDir), c.BootMAC)...)
	}
	if !explicit("heartbeat-interval") && c.HeartbeatInterval > 0 {
		cfg.HeartbeatInterval = c.HeartbeatInterval
	}
	if cfg.AgentToken == "" {
		cfg.AgentToken = c.AgentToken
	}
	if c.Insecure && !explicit("insecure") {
		cfg.TLS.InsecureSkipVerify = true // ipa-insecure asks for it
	}
	listenPort := 9999
	if c.ListenPort != 0 {
		listenPort = c.ListenPort
	}
	if !explicit("listen") && (c.ramdisk() || c.ListenHost != "" || c.ListenPort != 0) {
		cfg.Listen = net.JoinHostPort(c.ListenHost, strconv.Itoa(listenPort))
	}
	if !explicit("advertise-url") && (c.ramdisk() || c.AdvertiseHost != "") {
		host := c.AdvertiseHost
		if host == "" {
			h, err := routableAddr(ctx, cfg.APIURL)
			if err != nil {
				return err
			}
			host = h
		}
		proto, port := c.AdvertiseProtocol, c.AdvertisePort
		if proto == "" {
			proto = "http"
		}
		if port == 0 {
			port = 9999 // IPA's ipa-advertise-port default, whatever the listen port
		}
		cfg.AdvertiseURL = proto + "://" + net.JoinHostPort(host, strconv.Itoa(port))
	}
	if !explicit("disk") {
		min := c.MinDiskSize
		if min == 0 {
			min = DefaultMinDiskSize
		}
		attempts := 1
		if c.ramdisk() {
			attempts = diskWaitAttempts // the disks' drivers may still be probing
		}
		disk, err := waitInstallDisk(ctx, cfg.RootDir, min, attempts)
		if err != nil && ctx.Err() != nil {
			return err
		}
		if err != nil && cfg.Log != nil {
			cfg.Log.Warn("no install disk; commands that write a disk will fail", "err", err)
		}
		cfg.Disk = disk
	}
	return nil
}

// routableAddr is the local address the kernel would send from to reach
// the API's host (a UDP "connection" sends nothing), retried for up to a
// minute while DHCP may still be configuring the NICs.
func routableAddr(ctx context.Context, apiURL string) (string, error) {
	u, err := url.Parse(apiURL)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("agent: no host in API URL %q to find the advertised address", apiURL)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "udp", net.JoinHostPort(u.Hostname(), port))
		if err == nil {
			addr := conn.LocalAddr().(*net.UDPAddr).IP.String()
			conn.Close()
			return addr, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("agent: no route to the API host %s to find the advertised address (set ipa-advertise-host): %w", u.Hostname(), err)
		}
		if clock.Sleep(ctx, time.Second) != nil {
			return "", ctx.Err()
		}
	}
}

func without(list []string, s string) []string {
	out := list[:0:0]
	for _, v := range list {
		if !strings.EqualFold(v, s) {
			out = append(out, v)
		}
	}
	return out
}
