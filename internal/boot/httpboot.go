package boot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// UEFI HTTP boot (Ironic's "http" and "http-ipxe" boot interfaces): the
// firmware's own network stack asks DHCP with vendor class "HTTPClient"
// and downloads the boot file URL it is answered with. Anvil hands it one
// of two loaders, both served by Handler below HTTPURL:
//
//	HTTPBootIPXE  {HTTPURL}/ipxe.efi or /snponly.efi (Debian's ipxe package), which
//	              asks DHCP again as iPXE and chains {HTTPURL}/boot.ipxe as PXE does
//	HTTPBootGRUB  {HTTPURL}/grubx64.efi, a GRUB image Anvil builds with grub-mkimage
//	              from Debian's grub-efi-amd64-bin: it asks DHCP for an address and
//	              reads {HTTPURL}/grub/{mac}, the node's GRUB configuration (kernel
//	              and ramdisk over HTTP, or exit to the next boot device)
const (
	HTTPBootIPXE = "ipxe"
	HTTPBootGRUB = "grub"
)

// GRUBLoader is the file name of the GRUB image below HTTPURL.
const GRUBLoader = "grubx64.efi"

// DefaultGRUBModules is where Debian's grub-efi-amd64-bin puts GRUB's
// x86_64-efi modules.
const DefaultGRUBModules = "/usr/lib/grub/x86_64-efi"

// grubFile is a node's GRUB configuration in its directory.
const grubFile = "grub.cfg"

// grubPrefix starts the per-MAC GRUB configurations' paths below HTTPURL.
const grubPrefix = "/grub/"

// grubModules are built into the GRUB image: the EFI network stack, HTTP,
// the Linux loader and what the configurations use.
var grubModules = []string{"efinet", "net", "http", "linux", "normal", "configfile", "echo", "test", "sleep", "efi_gop", "all_video", "reboot"}

// httpLoaders are the loaders UEFI HTTP boot firmware downloads.
type httpLoaders struct {
	ipxeDir    string
	grubMods   string
	grubOut    string // the built GRUB image
	grubServer string // "(http,host:port)" as GRUB names the boot endpoint
	grubPath   string // HTTPURL's path

	mu      sync.Mutex
	grubErr error // a failed build, reported by every publish that needs it
	built   bool
}

func newHTTPLoaders(cfg Config, dir string) *httpLoaders {
	l := &httpLoaders{ipxeDir: cfg.LoaderDir, grubMods: cfg.GRUBModules, grubOut: filepath.Join(dir, GRUBLoader)}
	if l.ipxeDir == "" {
		l.ipxeDir = DefaultTFTPDir
	}
	if l.grubMods == "" {
		l.grubMods = DefaultGRUBModules
	}
	if u, err := url.Parse(cfg.HTTPURL); err == nil {
		if u.Scheme == "http" {
			host := u.Host
			if u.Port() == "" {
				host += ":80"
			}
			l.grubServer = "(http," + host + ")"
		}
		l.grubPath = strings.TrimRight(u.Path, "/")
	}
	return l
}

// checkHTTPBoot validates a Ramdisk.HTTPBoot and, for GRUB, builds its
// image on first use.
func (s *Service) checkHTTPBoot(mode string) error {
	switch mode {
	case "", HTTPBootIPXE:
		return nil
	case HTTPBootGRUB:
		return s.buildGRUB()
	}
	return fmt.Errorf("unknown HTTP boot loader %q (want %q or %q)", mode, HTTPBootIPXE, HTTPBootGRUB)
}

// buildGRUB makes the GRUB image once. Its embedded configuration asks
// DHCP for an address on the NIC the firmware booted from and reads that
// MAC's configuration from the boot endpoint.
func (s *Service) buildGRUB() error {
	l := s.http
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built {
		return l.grubErr
	}
	l.grubErr = l.build()
	l.built = true
	if l.grubErr != nil {
		s.log.Error("building the GRUB loader for UEFI HTTP boot", "err", l.grubErr)
	}
	return l.grubErr
}

func (l *httpLoaders) build() error {
	if l.grubServer == "" {
		return errors.New("the http boot interface's GRUB loader fetches over plain http: --http-url must be an http:// URL")
	}
	mkimage, err := exec.LookPath("grub-mkimage")
	if err != nil {
		return errors.New("grub-mkimage not found: install Debian's grub-common (and grub-efi-amd64-bin) for the http boot interface")
	}
	if _, err := os.Stat(filepath.Join(l.grubMods, "http.mod")); err != nil {
		return fmt.Errorf("GRUB's x86_64-efi modules are missing (%s/http.mod): install Debian's grub-efi-amd64-bin for the http boot interface", l.grubMods)
	}
	dir := filepath.Dir(l.grubOut)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	early := filepath.Join(dir, "early.cfg")
	if err := os.WriteFile(early, grubEarlyConfig(l.grubServer, l.grubPath), 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tmp := l.grubOut + ".tmp"
	args := append([]string{"-O", "x86_64-efi", "-d", l.grubMods, "-c", early, "-p", l.grubServer + l.grubPath, "-o", tmp}, grubModules...)
	out, err := exec.CommandContext(ctx, mkimage, args...).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("grub-mkimage: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return os.Rename(tmp, l.grubOut)
}

// grubEarlyConfig is built into the GRUB image: DHCP on the boot NIC,
// then the MAC's configuration, retried while the endpoint has none yet
// (as the iPXE script retries its downloads).
func grubEarlyConfig(server, path string) []byte {
	return []byte(`# Anvil: UEFI HTTP boot loader.
net_bootp
echo "Anvil: looking up ${net_default_mac}"
configfile ` + server + path + grubPrefix + `${net_default_mac}
echo "Anvil: no boot configuration for ${net_default_mac}; returning to the firmware."
sleep 5
exit 1
`)
}

// grubRamdiskConfig boots the node's kernel and ramdisk over HTTP, as
// ramdiskScript does for iPXE.
func (s *Service) grubRamdiskConfig(token, params string) []byte {
	l := s.http
	base := l.grubServer + l.grubPath + "/n/" + token
	cmdline := strings.Join(strings.Fields(params), " ")
	if cmdline != "" {
		cmdline += " "
	}
	cmdline += "BOOTIF=${net_default_mac}"
	if s.apiURL != "" {
		cmdline += " ipa-api-url=" + s.apiURL
	}
	return fmt.Appendf(nil, `# Anvil: deploy ramdisk.
set timeout=0
echo "Anvil: loading the kernel"
linux %s/%s %s
echo "Anvil: loading the ramdisk"
initrd %s/%s
boot
`, base, kernelFile, grubQuote(cmdline), base, ramdiskFile)
}

// grubQuote keeps GRUB from reading ; | & $ { } and quotes in kernel
// parameters, except the ${net_default_mac} Anvil puts there itself.
func grubQuote(cmdline string) string {
	const mac = "${net_default_mac}"
	parts := strings.Split(cmdline, mac)
	for i, p := range parts {
		var b strings.Builder
		for _, r := range p {
			if strings.ContainsRune(`\'"$;|&{}<>#`, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		parts[i] = b.String()
	}
	return strings.Join(parts, mac)
}

// grubLocalBootConfig leaves GRUB so the firmware boots the next device.
func grubLocalBootConfig() []byte {
	return []byte(`# Anvil: local boot.
echo "Anvil: booting from the local disk."
exit 0
`)
}

// HTTPBootURL is the boot file URL UEFI HTTP boot firmware with mac gets,
// "" for a MAC whose node is not booted by HTTP. efiBinary names the iPXE
// binary (EFIBinary or SNPOnlyBinary).
func (s *Service) HTTPBootURL(mac net.HardwareAddr, efiBinary string) string {
	s.mu.RLock()
	rec := s.byMAC[mac.String()]
	s.mu.RUnlock()
	if rec == nil {
		return ""
	}
	switch rec.HTTPBoot {
	case HTTPBootIPXE:
		return s.httpURL + "/" + efiBinary
	case HTTPBootGRUB:
		return s.httpURL + "/" + GRUBLoader
	}
	return ""
}

// serveLoader answers {HTTPURL}/ipxe.efi, /snponly.efi and /grubx64.efi.
func (s *Service) serveLoader(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := filepath.Join(s.http.ipxeDir, name)
		if name == GRUBLoader {
			path = s.http.grubOut
		}
		f, err := os.Open(path)
		if err != nil {
			s.log.Warn("UEFI HTTP boot loader missing", "file", path, "remote", r.RemoteAddr, "err", err)
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodGet && r.Header.Get("Range") == "" {
			s.log.Debug("serving UEFI HTTP boot loader", "file", name, "remote", r.RemoteAddr)
		}
		w.Header().Set("Content-Type", "application/efi")
		http.ServeContent(w, r, name, st.ModTime(), f)
	}
}

// serveGRUB answers {HTTPURL}/grub/aa:bb:cc:dd:ee:ff (GRUB's
// ${net_default_mac}) with the node's GRUB configuration.
func (s *Service) serveGRUB(w http.ResponseWriter, r *http.Request) {
	hw, rec, ok := s.recordOf(w, r)
	if !ok {
		return
	}
	if rec == nil || rec.HTTPBoot != HTTPBootGRUB {
		http.Error(w, "no boot configuration for this MAC address", http.StatusNotFound)
		return
	}
	cfg, err := os.ReadFile(filepath.Join(s.nodesDir, rec.Token, grubFile))
	if err != nil {
		http.Error(w, "no boot configuration for this MAC address", http.StatusNotFound)
		return
	}
	s.log.Debug("serving GRUB configuration", "node", rec.Node, "mac", hw.String(), "remote", r.RemoteAddr)
	serveScript(w, r, "grub.cfg", time.Time{}, cfg)
}
