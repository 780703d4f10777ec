package boot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sync/singleflight"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/localfile"
)

// Image is a kernel or ramdisk to serve: an http(s) URL or a local file
// path, with an optional checksum ("sha256:<hex>", "sha512:<hex>", or bare
// hex whose length says the algorithm; md5 refused unless AllowMD5).
type Image struct{ Source, Checksum string }

// Ramdisk is what a node network-boots into.
type Ramdisk struct {
	Kernel, Ramdisk Image
	KernelParams    string
	// HTTPBoot is how UEFI HTTP boot firmware of the node's MACs reaches
	// the ramdisk (HTTPBootIPXE or HTTPBootGRUB); "" answers only PXE.
	HTTPBoot string
}

// checksum is a parsed Image.Checksum: the image checksum policy is
// ipa.ParseChecksum's, shared with the deploy agent's images.
type checksum = ipa.Checksum

// parseChecksum reads Image.Checksum; ok is false when none is given.
func parseChecksum(s string, allowMD5 bool) (c checksum, ok bool, err error) {
	c, err = ipa.ParseChecksum("", s, allowMD5)
	if errors.Is(err, ipa.ErrNoChecksum) {
		return checksum{}, false, nil
	}
	if err != nil {
		return checksum{}, false, fmt.Errorf("checksum %q: %w", s, err)
	}
	return c, true, nil
}

// MaskURL returns s with the password of its user info replaced by ***
// (http://user:***@host/path); strings that are not URLs come back unchanged.
func MaskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if err != nil && strings.Contains(s, "@") {
			return "<unparseable URL>"
		}
		return s
	}
	if _, set := u.User.Password(); !set {
		return s
	}
	name := url.User(u.User.Username()).String()
	return strings.Replace(u.String(), u.User.String()+"@", name+":***@", 1)
}

// cache is the content cache of images under one directory. An entry's
// name is derived from its source and checksum; a file is only ever
// renamed into place after its checksum matched.
type cache struct {
	dir      string
	client   *http.Client
	allowMD5 bool
	// files are the only directories local images may come from.
	files  *localfile.Roots
	flight singleflight.Group
}

// fetch returns the path of a verified local copy of img, downloading or
// copying it when needed. Concurrent fetches of the same image share one
// download (done with the first caller's context). A cached entry is
// re-verified; one that no longer matches its checksum is removed and
// refused. Without a checksum the image is fetched afresh every time.
func (c *cache) fetch(ctx context.Context, img Image) (string, error) {
	if strings.TrimSpace(img.Source) == "" {
		return "", errors.New("image source is empty")
	}
	sum, verify, err := parseChecksum(img.Checksum, c.allowMD5)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", MaskURL(img.Source), err)
	}
	if path, local := localPath(img.Source); local {
		// Refused before the cache is consulted: a cached copy is served
		// only to a source that may still be read.
		if err := c.files.Check(path); err != nil {
			return "", fmt.Errorf("image %s: %w", path, err)
		}
	}
	key := sha256.Sum256([]byte(img.Source + "\x00" + sum.String()))
	path := filepath.Join(c.dir, hex.EncodeToString(key[:]))
	v, err, _ := c.flight.Do(path, func() (any, error) {
		if verify {
			ok, err := c.cached(path, sum)
			if err != nil {
				return nil, fmt.Errorf("image %s: %w", MaskURL(img.Source), err)
			}
			if ok {
				return path, nil
			}
		}
		return path, c.download(ctx, img.Source, path, sum, verify)
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// cached reports whether a verified entry exists at path. An entry whose
// content no longer matches is removed and reported as an error.
func (c *cache) cached(path string, sum checksum) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open cached copy: %w", err)
	}
	defer f.Close()
	h := sum.NewHash()
	if _, err := io.Copy(h, f); err != nil {
		return false, fmt.Errorf("read cached copy: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum.Value {
		os.Remove(path)
		return false, fmt.Errorf("cached copy does not match its checksum (%s, got %s:%s); removed it, publish again to download afresh", sum, sum.Algo, got)
	}
	return true, nil
}

// download copies source (URL or local path) to a temporary file next to
// path, checks it and renames it into place.
func (c *cache) download(ctx context.Context, source, path string, sum checksum, verify bool) error {
	masked := MaskURL(source)
	body, err := c.open(ctx, source)
	if err != nil {
		return err
	}
	defer body.Close()
	tmp, err := os.CreateTemp(c.dir, ".download-*")
	if err != nil {
		return fmt.Errorf("image %s: %w", masked, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sum.NewHash()
	_, err = io.Copy(io.MultiWriter(tmp, h), body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fetch %s: %w", masked, scrubURLError(err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); verify && got != sum.Value {
		return fmt.Errorf("image %s: checksum mismatch: want %s, got %s:%s", masked, sum, sum.Algo, got)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("image %s: %w", masked, err)
	}
	return nil
}

// localPath is the local file a source names (a path, or a file:// URL's
// path), and whether it names one.
func localPath(source string) (string, bool) {
	u, err := url.Parse(source)
	if err != nil || u.Scheme == "" || len(u.Scheme) == 1 { // a path, or a Windows drive letter
		return source, true
	}
	if u.Scheme == "file" {
		return u.Path, true
	}
	return "", false
}

// open returns the content of an http(s) URL or a local file.
func (c *cache) open(ctx context.Context, source string) (io.ReadCloser, error) {
	masked := MaskURL(source)
	if path, local := localPath(source); local {
		return c.openFile(path)
	}
	u, err := url.Parse(source)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", masked, err)
	}
	switch u.Scheme {
	case "http", "https":
	default:
		return nil, fmt.Errorf("image %s: unsupported scheme %q (use http, https, file or a path)", masked, u.Scheme)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", masked, scrubURLError(err))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", masked, scrubURLError(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("fetch %s: HTTP %s", masked, resp.Status)
	}
	return resp.Body, nil
}

// openFile opens a local image through the allowed directories
// (localfile.Roots.Open, Ironic's [conductor]file_url_allowed_paths), so
// node settings cannot publish arbitrary files of the Anvil host.
func (c *cache) openFile(path string) (io.ReadCloser, error) {
	f, err := c.files.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	return f, nil
}

// scrubURLError drops the URL net/http puts in its errors (the caller
// names the masked one) and keeps the cause.
func scrubURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}
