package boot

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/anvil-metal/anvil/internal/isoimage"
	"github.com/anvil-metal/anvil/internal/localfile"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
)

// Config configures a Service.
type Config struct {
	// Root is the directory for per-node configs and the image cache
	// (Ironic's http_root); created 0700.
	Root string
	// HTTPURL is the base URL of the boot endpoint as machines reach it
	// (Ironic's [deploy]http_url), e.g. http://10.0.2.100:6385/boot.
	HTTPURL string
	// APIURL is handed to agents on the kernel command line as ipa-api-url=
	// (Ironic's public_endpoint); empty leaves it out.
	APIURL string
	// AllowMD5 accepts md5 image checksums.
	AllowMD5 bool
	// FileAllowedPaths lists the only directories local image files may
	// come from (Ironic's [conductor]file_url_allowed_paths); empty means
	// Root/images (DefaultImagesDir), created when missing. Never "any":
	// what a node names is served to whoever fetches its boot files.
	FileAllowedPaths []string
	// Private are files that must never be readable through
	// FileAllowedPaths (the SQLite database): New fails when one lies
	// inside an allowed directory.
	Private []string
	// HTTPClient downloads images; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Log receives the service's messages; nil discards them.
	Log *slog.Logger
	// ISOLoaders are the boot loaders PublishISO builds images with; zero
	// values take isoimage.DefaultLoaders (Debian's paths).
	ISOLoaders isoimage.Loaders
	// LoaderDir holds the iPXE EFI binaries served to UEFI HTTP boot
	// firmware ({HTTPURL}/ipxe.efi, {HTTPURL}/snponly.efi); empty means
	// DefaultTFTPDir.
	LoaderDir string
	// GRUBModules is the directory of GRUB's x86_64-efi modules the
	// "http" boot interface's loader is built from; empty means
	// DefaultGRUBModules.
	GRUBModules string
}

// Service publishes and serves per-node network boot files. It is safe
// for concurrent use.
type Service struct {
	httpURL, apiURL string
	nodesDir        string
	cache           *cache
	log             *slog.Logger
	loaders         isoimage.Loaders
	http            *httpLoaders

	seen *recent.Log[model.BootEvent]

	mu      sync.RWMutex
	byNode  map[string]*record
	byMAC   map[string]*record // key: canonical MAC (aa:bb:cc:dd:ee:ff)
	byToken map[string]*record
}

// record is what a node has published; it is saved as node.json in the
// node's directory, Root/nodes/{token}/.
type record struct {
	Node  string   `json:"node"`
	Token string   `json:"token"`
	MACs  []string `json:"macs"`
	// Local is true for a local-boot script (no kernel or ramdisk).
	Local bool `json:"local_boot"`
	// ISO is true for a virtual media image (boot.iso, no MACs, no script).
	ISO bool `json:"iso,omitempty"`
	// HTTPBoot is what UEFI HTTP boot firmware is handed (HTTPBootIPXE,
	// HTTPBootGRUB; "" = none). A local-boot record keeps the node's.
	HTTPBoot string `json:"http_boot,omitempty"`

	script []byte // the iPXE script, boot.ipxe in the node's directory
}

// DefaultImagesDir is the directory below Root local images may come from
// when Config.FileAllowedPaths is empty.
const DefaultImagesDir = "images"

// Names of the files in a node's directory.
const (
	recordFile  = "node.json"
	scriptFile  = "boot.ipxe"
	kernelFile  = "kernel"
	ramdiskFile = "ramdisk"
	isoFile     = "boot.iso"
)

// New creates the service, making Root (0700) and reloading every node
// published before.
func New(cfg Config) (*Service, error) {
	if cfg.Root == "" {
		return nil, errors.New("boot: Root is required")
	}
	u, err := url.Parse(cfg.HTTPURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("boot: HTTPURL %q must be an absolute http(s) URL", cfg.HTTPURL)
	}
	if hasControl(cfg.APIURL+cfg.HTTPURL) || strings.ContainsAny(cfg.APIURL+cfg.HTTPURL, " ") {
		return nil, errors.New("boot: HTTPURL and APIURL must not contain spaces or control characters")
	}
	client := cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	allowed := cfg.FileAllowedPaths
	if len(allowed) == 0 {
		images := filepath.Join(cfg.Root, DefaultImagesDir)
		if err := os.MkdirAll(images, 0o700); err != nil {
			return nil, fmt.Errorf("boot: %w", err)
		}
		allowed = []string{images}
	}
	files, err := localfile.NewRoots(allowed)
	if err == nil {
		err = files.Guard(cfg.Private...)
	}
	if err != nil {
		return nil, fmt.Errorf("boot: %w", err)
	}
	s := &Service{
		httpURL:  strings.TrimRight(cfg.HTTPURL, "/"),
		apiURL:   cfg.APIURL,
		nodesDir: filepath.Join(cfg.Root, "nodes"),
		cache:    &cache{dir: filepath.Join(cfg.Root, "cache"), client: client, allowMD5: cfg.AllowMD5, files: files},
		log:      log.With("component", "boot"),
		loaders:  withDefaults(cfg.ISOLoaders),
		http:     newHTTPLoaders(cfg, filepath.Join(cfg.Root, "loaders")),
		seen:     NewSeen(),
		byNode:   map[string]*record{},
		byMAC:    map[string]*record{},
		byToken:  map[string]*record{},
	}
	for _, dir := range []string{cfg.Root, s.nodesDir, s.cache.dir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("boot: %w", err)
		}
	}
	if err := os.Chmod(cfg.Root, 0o700); err != nil {
		return nil, fmt.Errorf("boot: %w", err)
	}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// reload reads every node directory; directories without a valid record
// (an interrupted first publish) are removed.
func (s *Service) reload() error {
	entries, err := os.ReadDir(s.nodesDir)
	if err != nil {
		return fmt.Errorf("boot: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(s.nodesDir, e.Name())
		rec, err := readRecord(dir)
		if err == nil && rec.Token != e.Name() {
			err = errors.New("token does not match the directory")
		}
		if err == nil {
			err = s.claim(rec)
		}
		if err != nil {
			s.log.Warn("removing unusable node boot directory", "dir", dir, "err", err)
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("boot: %w", err)
			}
			continue
		}
		s.index(rec)
	}
	return nil
}

func readRecord(dir string) (*record, error) {
	data, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		return nil, err
	}
	rec := &record{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, err
	}
	if rec.Node == "" || rec.Token == "" || (len(rec.MACs) == 0 && !rec.ISO) {
		return nil, errors.New("incomplete record")
	}
	if rec.script, err = os.ReadFile(filepath.Join(dir, scriptFile)); err != nil {
		return nil, err
	}
	return rec, nil
}

// PublishRamdisk fetches and verifies the kernel and ramdisk and makes the
// node's MACs boot them with r.KernelParams, ipa-api-url and BOOTIF on the
// kernel command line.
func (s *Service) PublishRamdisk(ctx context.Context, node string, macs []string, r Ramdisk) error {
	canon, err := s.check(node, macs)
	if err != nil {
		return err
	}
	if hasControl(r.KernelParams) {
		return errors.New("boot: kernel parameters must not contain control characters")
	}
	kernel, err := s.cache.fetch(ctx, r.Kernel)
	if err != nil {
		return fmt.Errorf("boot: node %s: kernel: %w", node, err)
	}
	ramdisk, err := s.cache.fetch(ctx, r.Ramdisk)
	if err != nil {
		return fmt.Errorf("boot: node %s: ramdisk: %w", node, err)
	}
	if err := s.checkHTTPBoot(r.HTTPBoot); err != nil {
		return fmt.Errorf("boot: node %s: %w", node, err)
	}
	_, err = s.publishRecord(&record{Node: node, MACs: canon, HTTPBoot: r.HTTPBoot}, func(rec *record, dir string) error {
		if err := removeFiles(dir, isoFile); err != nil {
			return err
		}
		if err := linkOrCopy(kernel, filepath.Join(dir, kernelFile)); err != nil {
			return err
		}
		if err := linkOrCopy(ramdisk, filepath.Join(dir, ramdiskFile)); err != nil {
			return err
		}
		rec.script = ramdiskScript(s.httpURL+"/n/"+rec.Token, r.KernelParams, s.apiURL)
		if rec.HTTPBoot == HTTPBootGRUB {
			return writeAtomic(filepath.Join(dir, grubFile), s.grubRamdiskConfig(rec.Token, r.KernelParams))
		}
		return removeFiles(dir, grubFile)
	})
	return err
}

// PublishLocalBoot makes the node's MACs get a script that exits iPXE, so
// the firmware boots the next device (the disk).
func (s *Service) PublishLocalBoot(ctx context.Context, node string, macs []string) error {
	canon, err := s.check(node, macs)
	if err != nil {
		return err
	}
	return s.publish(node, canon, true, func(rec *record, dir string) error {
		rec.script = localBootScript()
		if rec.HTTPBoot == HTTPBootGRUB {
			if err := writeAtomic(filepath.Join(dir, grubFile), grubLocalBootConfig()); err != nil {
				return err
			}
		}
		return removeFiles(dir, kernelFile, ramdiskFile, isoFile)
	})
}

// removeFiles removes names from dir; absent files are not an error.
func removeFiles(dir string, names ...string) error {
	for _, name := range names {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// check validates a publish request and returns the canonical MACs. It
// fails early when another node holds one of them; publish checks again
// under the lock.
func (s *Service) check(node string, macs []string) ([]string, error) {
	if node == "" || hasControl(node) {
		return nil, fmt.Errorf("boot: invalid node name %q", node)
	}
	canon, err := canonicalMACs(macs)
	if err != nil {
		return nil, fmt.Errorf("boot: node %s: %w", node, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.claim(&record{Node: node, MACs: canon}); err != nil {
		return nil, err
	}
	return canon, nil
}

// claim fails when another node holds one of rec's MACs. Callers hold s.mu.
func (s *Service) claim(rec *record) error {
	for _, mac := range rec.MACs {
		if other, ok := s.byMAC[mac]; ok && other.Node != rec.Node {
			return fmt.Errorf("boot: node %s: MAC %s already belongs to node %s", rec.Node, mac, other.Node)
		}
	}
	return nil
}

// publish writes a node's directory: fill writes the boot files and sets
// the script; then the script and the record are saved (the record last,
// atomically), and the in-memory index is swapped.
func (s *Service) publish(node string, macs []string, local bool, fill func(rec *record, dir string) error) error {
	_, err := s.publishRecord(&record{Node: node, MACs: macs, Local: local}, fill)
	return err
}

// publishRecord is publish for a record made by the caller; it returns
// the record as indexed (with its token).
func (s *Service) publishRecord(rec *record, fill func(rec *record, dir string) error) (*record, error) {
	node, macs, local := rec.Node, rec.MACs, rec.Local
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.claim(rec); err != nil {
		return nil, err
	}
	if old := s.byNode[node]; old != nil {
		rec.Token = old.Token // keep URLs stable across re-publishing
		if rec.Local && !old.ISO {
			rec.HTTPBoot = old.HTTPBoot // how the firmware reaches its script
		}
	} else {
		rec.Token = rand.Text()
	}
	dir := filepath.Join(s.nodesDir, rec.Token)
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = fill(rec, dir)
	}
	if err == nil {
		err = writeAtomic(filepath.Join(dir, scriptFile), rec.script)
	}
	if err == nil {
		var data []byte
		data, err = json.MarshalIndent(rec, "", "  ")
		if err == nil {
			err = writeAtomic(filepath.Join(dir, recordFile), data)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("boot: node %s: %w", node, err)
	}
	s.unindex(s.byNode[node])
	s.index(rec)
	s.log.Info("published boot files", "node", node, "macs", strings.Join(macs, ","), "local_boot", local, "iso", rec.ISO)
	return rec, nil
}

// Withdraw removes every file published for the node. Withdrawing a node
// with nothing published is not an error.
func (s *Service) Withdraw(ctx context.Context, node string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.byNode[node]
	if rec == nil {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(s.nodesDir, rec.Token)); err != nil {
		return fmt.Errorf("boot: node %s: %w", node, err)
	}
	s.unindex(rec)
	s.log.Info("withdrew boot files", "node", node)
	return nil
}

// KnownMAC reports whether a node has published boot files for mac.
func (s *Service) KnownMAC(mac net.HardwareAddr) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.byMAC[mac.String()]
	return ok
}

func (s *Service) index(rec *record) {
	s.byNode[rec.Node] = rec
	s.byToken[rec.Token] = rec
	for _, mac := range rec.MACs {
		s.byMAC[mac] = rec
	}
}

func (s *Service) unindex(rec *record) {
	if rec == nil {
		return
	}
	delete(s.byNode, rec.Node)
	delete(s.byToken, rec.Token)
	for _, mac := range rec.MACs {
		if s.byMAC[mac] == rec {
			delete(s.byMAC, mac)
		}
	}
}

// canonicalMACs parses Ethernet MACs into aa:bb:cc:dd:ee:ff form, without
// duplicates; at least one is required.
func canonicalMACs(macs []string) ([]string, error) {
	if len(macs) == 0 {
		return nil, errors.New("at least one MAC address is required")
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range macs {
		hw, err := net.ParseMAC(strings.TrimSpace(m))
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("invalid MAC address %q", m)
		}
		if c := hw.String(); !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// writeAtomic replaces path with data (0600) through a rename.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// linkOrCopy replaces dst with a hard link to src, or a copy where links
// are not possible; either way later changes to the cache entry do not
// reach dst.
func linkOrCopy(src, dst string) error {
	tmp := filepath.Join(filepath.Dir(dst), ".link-"+filepath.Base(dst))
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
