package boot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/isoimage"
)

// imageServer serves named blobs over real HTTP and counts GETs per path.
type imageServer struct {
	*httptest.Server
	mu    sync.Mutex
	blobs map[string][]byte
	gets  map[string]*atomic.Int64
	// gate, when set, holds every GET until closed (to overlap publishes).
	gate chan struct{}
}

func newImageServer(t *testing.T, blobs map[string][]byte) *imageServer {
	t.Helper()
	is := &imageServer{blobs: blobs, gets: map[string]*atomic.Int64{}}
	for p := range blobs {
		is.gets[p] = &atomic.Int64{}
	}
	is.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		b, ok := is.blobs[r.URL.Path]
		gate := is.gate
		is.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		is.gets[r.URL.Path].Add(1)
		if gate != nil {
			<-gate
		}
		w.Write(b)
	}))
	t.Cleanup(is.Close)
	return is
}

func (is *imageServer) count(path string) int64 { return is.gets[path].Load() }

func sha256Of(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }

// blob returns n deterministic bytes that differ per seed.
func blob(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

type fixture struct {
	svc     *Service
	root    string
	boot    *httptest.Server // the boot endpoint, mounted under /boot/
	images  *imageServer
	kernel  []byte
	ramdisk []byte
	rd      Ramdisk
	handler atomic.Pointer[http.Handler]
	loaders isoimage.Loaders // for PublishISO (zero: Debian's paths)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{kernel: blob(1, 100_000), ramdisk: blob(2, 300_000)}
	f.images = newImageServer(t, map[string][]byte{"/vmlinuz": f.kernel, "/initrd": f.ramdisk})
	f.rd = Ramdisk{
		Kernel:       Image{Source: f.images.URL + "/vmlinuz", Checksum: sha256Of(f.kernel)},
		Ramdisk:      Image{Source: f.images.URL + "/initrd", Checksum: sha256Of(f.ramdisk)},
		KernelParams: "console=ttyS0  ipa-debug=1",
	}
	f.root = t.TempDir()
	mux := http.NewServeMux()
	mux.Handle("/boot/", http.StripPrefix("/boot", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*f.handler.Load()).ServeHTTP(w, r)
	})))
	f.boot = httptest.NewServer(mux)
	t.Cleanup(f.boot.Close)
	f.restart(t)
	return f
}

// restart makes a new Service on the same Root, as a restarted Anvil does.
func (f *fixture) restart(t *testing.T) {
	t.Helper()
	svc, err := New(Config{Root: f.root, HTTPURL: f.bootURL(), APIURL: "http://10.0.2.100:6385", HTTPClient: f.images.Client(), ISOLoaders: f.loaders})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	handler := svc.Handler()
	f.handler.Store(&handler)
}

func (f *fixture) bootURL() string { return f.boot.URL + "/boot" }

func get(t *testing.T, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

var kernelLine = regexp.MustCompile(`(?m)^kernel (\S+) (.*) \|\| goto retry$`)
var initrdLine = regexp.MustCompile(`(?m)^initrd (\S+) \|\| goto retry$`)

// scriptURLs fetches the per-MAC script and returns it with the kernel and
// ramdisk URLs it names.
func (f *fixture) scriptURLs(t *testing.T, mac string) (script, kernel, cmdline, ramdisk string) {
	t.Helper()
	resp, body := get(t, "GET", f.bootURL()+macPath(mac))
	if resp.StatusCode != 200 {
		t.Fatalf("GET per-MAC script: %s %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("script Content-Type = %q", ct)
	}
	k, i := kernelLine.FindStringSubmatch(string(body)), initrdLine.FindStringSubmatch(string(body))
	if k == nil || i == nil {
		t.Fatalf("script lacks kernel/initrd lines:\n%s", body)
	}
	return string(body), k[1], k[2], i[1]
}

func TestPublishRamdiskServesScriptAndFiles(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.svc.PublishRamdisk(ctx, "node-1", []string{"52:54:00:AA:BB:01", "52-54-00-aa-bb-02"}, f.rd); err != nil {
		t.Fatal(err)
	}
	for _, mac := range []string{"52:54:00:aa:bb:01", "52:54:00:aa:bb:02"} {
		hw, _ := net.ParseMAC(mac)
		if !f.svc.KnownMAC(hw) {
			t.Errorf("KnownMAC(%s) = false", mac)
		}
	}
	script, kernelURL, cmdline, ramdiskURL := f.scriptURLs(t, "52:54:00:aa:bb:02")
	if !strings.HasPrefix(script, "#!ipxe\n") {
		t.Errorf("script does not start with #!ipxe:\n%s", script)
	}
	wantCmd := "console=ttyS0 ipa-debug=1 BOOTIF=${mac} ipa-api-url=http://10.0.2.100:6385 initrd=ramdisk"
	if cmdline != wantCmd {
		t.Errorf("kernel command line = %q, want %q", cmdline, wantCmd)
	}
	tokenPath := regexp.MustCompile(`^` + regexp.QuoteMeta(f.bootURL()) + `/n/([A-Z2-7]{26,})/kernel$`)
	m := tokenPath.FindStringSubmatch(kernelURL)
	if m == nil {
		t.Fatalf("kernel URL %q is not {HTTPURL}/n/{token of >=128 bits}/kernel", kernelURL)
	}
	if ramdiskURL != f.bootURL()+"/n/"+m[1]+"/ramdisk" {
		t.Errorf("ramdisk URL = %q", ramdiskURL)
	}
	for url, want := range map[string][]byte{kernelURL: f.kernel, ramdiskURL: f.ramdisk} {
		resp, body := get(t, "GET", url)
		if resp.StatusCode != 200 || !bytes.Equal(body, want) {
			t.Errorf("GET %s: %s, %d bytes, equal=%v", url, resp.Status, len(body), bytes.Equal(body, want))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("GET %s: Content-Type %q", url, ct)
		}
	}
	resp, body := get(t, "GET", ramdiskURL, "Range", "bytes=1000-1999")
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, f.ramdisk[1000:2000]) {
		t.Errorf("Range GET: %s, %d bytes", resp.Status, len(body))
	}
	resp, body = get(t, "HEAD", ramdiskURL)
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(f.ramdisk)) {
		t.Errorf("HEAD: %s, body %d, length %d", resp.Status, len(body), resp.ContentLength)
	}
	resp, _ = get(t, "POST", ramdiskURL)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s, want 405", resp.Status)
	}
}

func TestGenericScriptChainsPerMACAndExitsWhenUnknown(t *testing.T) {
	f := newFixture(t)
	resp, body := get(t, "GET", f.bootURL()+"/boot.ipxe")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET boot.ipxe: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := string(body)
	for _, want := range []string{"#!ipxe\n", "chain " + f.bootURL() + "/mac/${net${netid}/mac:hexhyp} || goto loop", "\nexit"} {
		if !strings.Contains(s, want) {
			t.Errorf("boot.ipxe lacks %q:\n%s", want, s)
		}
	}
	resp, _ = get(t, "GET", f.bootURL()+"/mac/52-54-00-00-00-99")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown MAC: %s, want 404", resp.Status)
	}
	hw, _ := net.ParseMAC("52:54:00:00:00:99")
	if f.svc.KnownMAC(hw) {
		t.Error("KnownMAC of an unpublished MAC = true")
	}
}

func TestNoGuessablePaths(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, node := range []string{"a", "b"} {
		if err := f.svc.PublishRamdisk(ctx, node, []string{fmt.Sprintf("52:54:00:00:01:0%d", i)}, f.rd); err != nil {
			t.Fatal(err)
		}
	}
	_, ka, _, _ := f.scriptURLs(t, "52:54:00:00:01:00")
	_, kb, _, _ := f.scriptURLs(t, "52:54:00:00:01:01")
	if ka == kb {
		t.Fatalf("two nodes share the kernel URL %s", ka)
	}
	token := strings.TrimSuffix(ka[strings.Index(ka, "/n/")+3:], "/kernel")
	other := "A" // one character changed: never the token's own last one
	if strings.HasSuffix(token, other) {
		other = "B"
	}
	for _, p := range []string{
		"/n/" + token + "/node.json", "/n/" + token + "/boot.ipxe", "/n/" + token + "/",
		"/n/" + strings.ToLower(token) + "/kernel", "/n/" + token[:len(token)-1] + other + "/kernel",
		"/n/a/kernel", "/nodes/" + token + "/kernel", "/cache/", "/n/" + token + "/..%2fnode.json",
	} {
		if resp, _ := get(t, "GET", f.bootURL()+p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", p, resp.Status)
		}
	}
}

func TestPublishLocalBoot(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mac := "52:54:00:00:02:01"
	if err := f.svc.PublishRamdisk(ctx, "n", []string{mac}, f.rd); err != nil {
		t.Fatal(err)
	}
	_, kernelURL, _, _ := f.scriptURLs(t, mac)
	if err := f.svc.PublishLocalBoot(ctx, "n", []string{mac}); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, "GET", f.bootURL()+macPath(mac))
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "#!ipxe\n") || !regexp.MustCompile(`(?m)^exit`).Match(body) || bytes.Contains(body, []byte("kernel")) {
		t.Errorf("local boot script: %s\n%s", resp.Status, body)
	}
	if resp, _ := get(t, "GET", kernelURL); resp.StatusCode != http.StatusNotFound {
		t.Errorf("kernel after local boot: %s, want 404", resp.Status)
	}
}

func TestMACBelongsToOneNode(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.svc.PublishRamdisk(ctx, "first", []string{"52:54:00:00:03:01", "52:54:00:00:03:02"}, f.rd); err != nil {
		t.Fatal(err)
	}
	err := f.svc.PublishLocalBoot(ctx, "second", []string{"52:54:00:00:03:09", "52:54:00:00:03:02"})
	if err == nil || !strings.Contains(err.Error(), "first") || !strings.Contains(err.Error(), "52:54:00:00:03:02") {
		t.Fatalf("claiming another node's MAC: err = %v, want one naming node first and the MAC", err)
	}
	// The same node re-publishing is fine, and can move to other MACs.
	if err := f.svc.PublishRamdisk(ctx, "first", []string{"52:54:00:00:03:02"}, f.rd); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.PublishLocalBoot(ctx, "second", []string{"52:54:00:00:03:01"}); err != nil {
		t.Fatalf("a MAC the first node gave up: %v", err)
	}
	for _, bad := range [][]string{nil, {"nope"}, {"00:11:22:33:44:55:66:77"}} {
		if err := f.svc.PublishLocalBoot(ctx, "third", bad); err == nil {
			t.Errorf("MACs %q accepted", bad)
		}
	}
}

func TestWithdrawRemovesEverything(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mac := "52:54:00:00:04:01"
	if err := f.svc.PublishRamdisk(ctx, "n", []string{mac}, f.rd); err != nil {
		t.Fatal(err)
	}
	_, kernelURL, _, ramdiskURL := f.scriptURLs(t, mac)
	if err := f.svc.Withdraw(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{kernelURL, ramdiskURL, f.bootURL() + macPath(mac)} {
		if resp, _ := get(t, "GET", u); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s after withdraw: %s", u, resp.Status)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(f.root, "nodes")); len(entries) != 0 {
		t.Errorf("node directories left after withdraw: %v", entries)
	}
	if err := f.svc.Withdraw(ctx, "n"); err != nil {
		t.Errorf("second withdraw: %v", err)
	}
	if err := f.svc.PublishLocalBoot(ctx, "other", []string{mac}); err != nil {
		t.Errorf("MAC still claimed after withdraw: %v", err)
	}
}

func TestRestartServesWhatWasPublished(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.svc.PublishRamdisk(ctx, "n1", []string{"52:54:00:00:05:01"}, f.rd); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.PublishLocalBoot(ctx, "n2", []string{"52:54:00:00:05:02"}); err != nil {
		t.Fatal(err)
	}
	before, kernelURL, _, _ := f.scriptURLs(t, "52:54:00:00:05:01")
	// Leftovers of an interrupted first publish are cleaned up at start.
	os.MkdirAll(filepath.Join(f.root, "nodes", "HALFDONE"), 0o700)
	f.restart(t)
	after, _, _, _ := f.scriptURLs(t, "52:54:00:00:05:01")
	if after != before {
		t.Errorf("script changed across restart:\n%s\nvs\n%s", before, after)
	}
	if resp, body := get(t, "GET", kernelURL); resp.StatusCode != 200 || !bytes.Equal(body, f.kernel) {
		t.Errorf("kernel after restart: %s", resp.Status)
	}
	if resp, _ := get(t, "GET", f.bootURL()+macPath("52:54:00:00:05:02")); resp.StatusCode != 200 {
		t.Errorf("local boot script after restart: %s", resp.Status)
	}
	if _, err := os.Stat(filepath.Join(f.root, "nodes", "HALFDONE")); !os.IsNotExist(err) {
		t.Errorf("incomplete node directory kept: %v", err)
	}
	if err := f.svc.PublishLocalBoot(ctx, "n3", []string{"52:54:00:00:05:01"}); err == nil || !strings.Contains(err.Error(), "n1") {
		t.Errorf("MAC ownership lost across restart: %v", err)
	}
	if st, err := os.Stat(f.root); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("Root mode = %v, %v; want 0700", st.Mode().Perm(), err)
	}
}

func TestConcurrentPublishesDownloadOnce(t *testing.T) {
	f := newFixture(t)
	gate := make(chan struct{})
	f.images.mu.Lock()
	f.images.gate = gate
	f.images.mu.Unlock()
	const nodes = 8
	errs := make(chan error, nodes)
	for i := range nodes {
		go func() {
			errs <- f.svc.PublishRamdisk(context.Background(), fmt.Sprintf("n%d", i), []string{fmt.Sprintf("52:54:00:00:06:%02x", i)}, f.rd)
		}()
	}
	// Hold the first download until every publish has had the chance to ask
	// for the same kernel: wait for the one GET to arrive, then release.
	for deadline := time.Now().Add(10 * time.Second); f.images.count("/vmlinuz") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no kernel download started")
		}
		time.Sleep(time.Millisecond)
	}
	// While that download hangs, the other publishes must wait for it
	// rather than start their own.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n := f.images.count("/vmlinuz"); n > 1 {
			t.Errorf("%d parallel downloads of the same kernel", n)
			break
		}
	}
	close(gate)
	for range nodes {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// Later publishes reuse the verified cache entry.
	if err := f.svc.PublishRamdisk(context.Background(), "late", []string{"52:54:00:00:06:ff"}, f.rd); err != nil {
		t.Fatal(err)
	}
	if k, r := f.images.count("/vmlinuz"), f.images.count("/initrd"); k != 1 || r != 1 {
		t.Errorf("downloads: kernel %d, ramdisk %d; want 1 each", k, r)
	}
}

func TestImageErrors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	closed := httptest.NewServer(http.NotFoundHandler())
	deadURL := closed.URL
	closed.Close()
	withCreds := strings.Replace(f.images.URL, "http://", "http://admin:s3cr3t@", 1)
	cases := []struct {
		name       string
		kernel     Image
		want       []string
		allowMD5   bool
		publishErr bool
	}{
		{"404 with credentials", Image{Source: withCreds + "/missing"}, []string{"admin:***@", "/missing", "404"}, false, true},
		{"unreachable", Image{Source: strings.Replace(deadURL, "http://", "http://u:pw9@", 1) + "/k"}, []string{"u:***@", "/k", "refused"}, false, true},
		{"checksum mismatch", Image{Source: f.images.URL + "/vmlinuz", Checksum: sha256Of([]byte("other"))}, []string{"checksum mismatch", "/vmlinuz"}, false, true},
		{"md5 refused", Image{Source: f.images.URL + "/vmlinuz", Checksum: strings.Repeat("a", 32)}, []string{"md5 image checksums are not allowed"}, false, true},
		{"bad checksum", Image{Source: f.images.URL + "/vmlinuz", Checksum: "sha256:xyz"}, []string{"64 hex digits"}, false, true},
		{"missing local file", Image{Source: filepath.Join(f.root, DefaultImagesDir, "nope")}, []string{"nope", "no such file"}, false, true},
		{"local file outside the allowed directories", Image{Source: filepath.Join(t.TempDir(), "nope")}, []string{"nope", "is not under --file-url-allowed-paths"}, false, true},
		{"unsupported scheme", Image{Source: "ftp://host/k"}, []string{"unsupported scheme"}, false, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rd := f.rd
			rd.Kernel = tc.kernel
			mac := fmt.Sprintf("52:54:00:00:07:%02x", i)
			err := f.svc.PublishRamdisk(ctx, "n", []string{mac}, rd)
			if err == nil {
				t.Fatal("publish succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, secret := range []string{"s3cr3t", "pw9"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q leaks the password", err)
				}
			}
			hw, _ := net.ParseMAC(mac)
			if f.svc.KnownMAC(hw) {
				t.Error("failed publish left the MAC known")
			}
		})
	}
}

func TestCachedCopyReverified(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.svc.PublishRamdisk(ctx, "n", []string{"52:54:00:00:08:01"}, f.rd); err != nil {
		t.Fatal(err)
	}
	_, kernelURL, _, _ := f.scriptURLs(t, "52:54:00:00:08:01")
	entries, _ := filepath.Glob(filepath.Join(f.root, "cache", "*"))
	if len(entries) != 2 {
		t.Fatalf("cache entries: %v", entries)
	}
	// Replace the kernel's cache entry (not in place: the node's hard links
	// keep the verified content), as a tampered or half-restored cache would.
	for _, e := range entries {
		if b, _ := os.ReadFile(e); bytes.Equal(b, f.kernel) {
			os.Remove(e)
			os.WriteFile(e, []byte("tampered"), 0o600)
		}
	}
	err := f.svc.PublishRamdisk(ctx, "m", []string{"52:54:00:00:08:02"}, f.rd)
	if err == nil || !strings.Contains(err.Error(), "does not match its checksum") {
		t.Fatalf("publish over a tampered cache: %v", err)
	}
	if resp, body := get(t, "GET", kernelURL); !bytes.Equal(body, f.kernel) {
		t.Errorf("published node's kernel changed with the cache: %s", resp.Status)
	}
	if err := f.svc.PublishRamdisk(ctx, "m", []string{"52:54:00:00:08:02"}, f.rd); err != nil {
		t.Fatalf("publish after the bad entry was dropped: %v", err)
	}
	if n := f.images.count("/vmlinuz"); n != 2 {
		t.Errorf("kernel downloads = %d, want 2 (first, then after the bad entry)", n)
	}
}

func TestLocalFilesAndNoChecksum(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	kpath := filepath.Join(f.root, DefaultImagesDir, "vmlinuz") // the default allowed directory
	os.WriteFile(kpath, f.kernel, 0o600)
	sum := sha512.Sum512(f.kernel)
	rd := Ramdisk{
		Kernel:  Image{Source: kpath, Checksum: hex.EncodeToString(sum[:])},
		Ramdisk: Image{Source: f.images.URL + "/initrd"}, // no checksum: fetched each time
	}
	for range 2 {
		if err := f.svc.PublishRamdisk(ctx, "n", []string{"52:54:00:00:09:01"}, rd); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.images.count("/initrd"); n != 2 {
		t.Errorf("unchecksummed ramdisk downloads = %d, want 2", n)
	}
	_, kernelURL, _, _ := f.scriptURLs(t, "52:54:00:00:09:01")
	if _, body := get(t, "GET", kernelURL); !bytes.Equal(body, f.kernel) {
		t.Error("kernel from a local file differs")
	}
	rd.Kernel.Source = "file://" + kpath
	if err := f.svc.PublishRamdisk(ctx, "n", []string{"52:54:00:00:09:01"}, rd); err != nil {
		t.Errorf("file:// source: %v", err)
	}
}

func TestParseChecksum(t *testing.T) {
	h64, h128 := strings.Repeat("ab", 32), strings.Repeat("CD", 64)
	cases := []struct {
		in, want string
		md5      bool
		err      bool
	}{
		{in: "", want: ""},
		{in: "sha256:" + h64, want: "sha256:" + h64},
		{in: h64, want: "sha256:" + h64},
		{in: h128, want: "sha512:" + strings.ToLower(h128)},
		{in: "SHA512:" + h128, want: "sha512:" + strings.ToLower(h128)},
		{in: strings.Repeat("0", 32), err: true},
		{in: strings.Repeat("0", 32), md5: true, want: "md5:" + strings.Repeat("0", 32)},
		{in: "md5:" + strings.Repeat("0", 32), err: true},
		{in: "sha1:" + strings.Repeat("0", 40), err: true},
		{in: "sha256:" + h64[:62], err: true},
		{in: "abc", err: true},
		{in: "sha256:" + strings.Repeat("zz", 32), err: true},
	}
	for _, tc := range cases {
		c, ok, err := parseChecksum(tc.in, tc.md5)
		got := ""
		if ok {
			got = c.String()
		}
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("parseChecksum(%q, md5=%v) = %q, %v", tc.in, tc.md5, got, err)
		}
	}
}

func TestMaskURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pa%40ss@host:8080/a/b?x=1": "http://user:***@host:8080/a/b?x=1",
		"https://user@host/a":                   "https://user@host/a",
		"http://host/a":                         "http://host/a",
		"/srv/images/vmlinuz":                   "/srv/images/vmlinuz",
	} {
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	root := t.TempDir()
	for _, cfg := range []Config{
		{HTTPURL: "http://h/boot"},
		{Root: root, HTTPURL: "/boot"},
		{Root: root, HTTPURL: "ftp://h/boot"},
		{Root: root, HTTPURL: "http://h/boot", APIURL: "http://h\nkernel x"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	svc, err := New(Config{Root: root, HTTPURL: "http://h/boot"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.PublishRamdisk(context.Background(), "n", []string{"52:54:00:00:0a:01"}, Ramdisk{KernelParams: "a\nchain http://evil"}); err == nil {
		t.Error("kernel parameters with a newline accepted")
	}
}

func TestFileAllowedPaths(t *testing.T) {
	allowed, other := t.TempDir(), t.TempDir()
	for _, d := range []string{allowed, other} {
		os.WriteFile(filepath.Join(d, "vmlinuz"), []byte("kernel"), 0o600)
	}
	// A link inside the allowed directory pointing out of it.
	os.Symlink(filepath.Join(other, "vmlinuz"), filepath.Join(allowed, "escape"))
	svc, err := New(Config{Root: t.TempDir(), HTTPURL: "http://127.0.0.1/boot", FileAllowedPaths: []string{allowed}})
	if err != nil {
		t.Fatal(err)
	}
	ok := Image{Source: filepath.Join(allowed, "vmlinuz")}
	ctx := context.Background()
	if err := svc.PublishRamdisk(ctx, "n", []string{"52:54:00:00:0b:01"}, Ramdisk{Kernel: ok, Ramdisk: ok}); err != nil {
		t.Fatalf("file in an allowed directory: %v", err)
	}
	for _, src := range []string{
		filepath.Join(other, "vmlinuz"), "file://" + filepath.Join(other, "vmlinuz"),
		filepath.Join(allowed, "escape"), filepath.Join(allowed, "..", filepath.Base(other), "vmlinuz"),
	} {
		err := svc.PublishRamdisk(ctx, "n", []string{"52:54:00:00:0b:01"}, Ramdisk{Kernel: Image{Source: src}, Ramdisk: ok})
		if err == nil || !strings.Contains(err.Error(), "is not under --file-url-allowed-paths") {
			t.Errorf("%s: err = %v, want a refusal", src, err)
		}
	}
}
