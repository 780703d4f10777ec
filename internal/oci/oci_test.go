package oci_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/oci"
	"github.com/anvil-metal/anvil/internal/oci/ocitest"
)

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func mustRef(t *testing.T, s string) oci.Ref {
	t.Helper()
	r, err := oci.ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRef(t *testing.T) {
	d := strings.Repeat("ab", 32)
	good := map[string]oci.Ref{
		"oci://quay.io/org/img:v1":                 {Registry: "quay.io", Repository: "org/img", Tag: "v1"},
		"oci://127.0.0.1:5000/img":                 {Registry: "127.0.0.1:5000", Repository: "img", Tag: "latest"},
		"oci://[::1]:5000/a/b_c/d--e@sha256:" + d:  {Registry: "[::1]:5000", Repository: "a/b_c/d--e", Digest: "sha256:" + d},
		"oci://r/img@SHA256:" + strings.ToUpper(d): {Registry: "r", Repository: "img", Digest: "sha256:" + d},
	}
	for in, want := range good {
		got, err := oci.ParseRef(in)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"oci://r/img@sha256:abc":         "Manifest digest length incorrect",
		"oci://r/img@md5:" + d[:32]:      "was not specific",
		"oci://r/img@sha256":             "Lacking required digest value",
		"oci://r/Img:v1":                 "invalid repository name",
		"oci://r/img:v1?x=1":             "invalid tag",
		"oci://r/../img:v1":              "invalid repository name",
		"oci://r/img:":                   "invalid tag",
		"oci://user:pw@r/img:v1":         "invalid registry host",
		"oci:///img":                     "oci://registry/repository",
		"http://r/img":                   "not an oci:// URL",
		"oci://r/img%2F..:v1":            "invalid repository name",
		"oci://r/img@sha256:" + d + "/x": "Manifest digest length incorrect",
	}
	for in, want := range bad {
		_, err := oci.ParseRef(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "Validation of image href") && !strings.HasPrefix(err.Error(), "The requested image") {
			t.Errorf("ParseRef(%q) error %v, want one with %q", in, err, want)
		}
	}
}

func TestParseSecret(t *testing.T) {
	if s := oci.ParseSecret("u:p:q"); *s != (oci.Secret{Username: "u", Password: "p:q"}) {
		t.Errorf("user:pass: %+v", s)
	}
	if s := oci.ParseSecret("tok"); *s != (oci.Secret{Password: "tok"}) {
		t.Errorf("token: %+v", s)
	}
	if oci.ParseSecret("") != nil {
		t.Error("empty secret is not none")
	}
}

// multiArch pushes a raw and a qcow2 artifact for amd64 and a raw one for
// arm64 under an index tagged "v1", and returns the layers' descriptors.
func multiArch(t *testing.T, r *ocitest.Registry) (amd64Raw, amd64Qcow, arm64Raw ocitest.Descriptor) {
	m1, l1 := r.PushArtifact(t, "disk/img", "", []byte("amd64 raw"), "application/zstd", "disk.raw.zst")
	m2, l2 := r.PushArtifact(t, "disk/img", "", []byte("amd64 qcow2"), "application/octet-stream", "disk.qcow2")
	m3, l3 := r.PushArtifact(t, "disk/img", "", []byte("arm64 raw"), "application/octet-stream", "disk.raw")
	m2.Platform, m2.Annotations = &ocitest.Platform{Architecture: "amd64", OS: "linux"}, map[string]string{"disktype": "qcow2"}
	m1.Platform, m1.Annotations = &ocitest.Platform{Architecture: "x86_64", OS: "linux"}, map[string]string{"disktype": "raw"}
	m3.Platform, m3.Annotations = &ocitest.Platform{Architecture: "arm64", OS: "linux"}, map[string]string{"disktype": "raw"}
	skip := m3
	skip.Annotations = map[string]string{"disktype": "vhdx"}
	r.PushIndex(t, "disk/img", "v1", m2, skip, m3, m1)
	return l1, l2, l3
}

func TestResolveIndexByArchitectureAndDiskType(t *testing.T) {
	r := ocitest.New(t, ocitest.NoAuth, "", "")
	raw, _, arm := multiArch(t, r)
	c := oci.NewClient(oci.Config{AllowHTTP: true})
	ctx := context.Background()
	im, err := c.Resolve(ctx, mustRef(t, "oci://"+r.Host+"/disk/img:v1"), "x86_64", nil)
	if err != nil {
		t.Fatal(err)
	}
	if im.BlobDigest != raw.Digest || im.DiskFormat != "raw" || im.Compression != "zstd" || im.Filename != "disk.raw.zst" ||
		im.URL != r.URL+"/v2/disk/img/blobs/"+raw.Digest || im.Checksum != sha([]byte("amd64 raw")) || im.Size != raw.Size {
		t.Errorf("amd64: %+v", im)
	}
	if !strings.HasPrefix(im.ManifestURL, "oci://"+r.Host+"/disk/img@sha256:") {
		t.Errorf("manifest URL %s", im.ManifestURL)
	}
	im, err = c.Resolve(ctx, mustRef(t, "oci://"+r.Host+"/disk/img:v1"), "aarch64", nil)
	if err != nil || im.BlobDigest != arm.Digest || im.Compression != "" {
		t.Errorf("aarch64: %+v %v", im, err)
	}
	// The chosen manifest pinned by digest resolves to the same blob,
	// of a disk type nobody said (Ironic's "unknown").
	pinned, err := c.Resolve(ctx, mustRef(t, im.ManifestURL), "", nil)
	if err != nil || pinned.BlobDigest != arm.Digest || pinned.DiskFormat != "" {
		t.Errorf("by digest: %+v %v", pinned, err)
	}
	// Manifests are cached by digest: resolving the pinned reference again
	// fetches no manifest.
	before := r.Gets("manifests/" + pinned.ManifestDigest)
	if again, err := c.Resolve(ctx, mustRef(t, im.ManifestURL), "", nil); err != nil || again != pinned || r.Gets("manifests/"+pinned.ManifestDigest) != before {
		t.Errorf("cached resolution: %+v %v, %d fetches after %d", again, err, r.Gets("manifests/"+pinned.ManifestDigest), before)
	}
	if _, err := c.Resolve(ctx, mustRef(t, "oci://"+r.Host+"/disk/img:v1"), "ppc64le", nil); err == nil ||
		!strings.Contains(err.Error(), `for architecture "ppc64le"`) {
		t.Errorf("no manifest for the architecture: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	r := ocitest.New(t, ocitest.NoAuth, "", "")
	multiArch(t, r)
	c := oci.NewClient(oci.Config{AllowHTTP: true})
	ctx := context.Background()
	_, err := c.Resolve(ctx, mustRef(t, "oci://"+r.Host+"/disk/img:v2"), "", nil)
	if want := "Image tag oci://" + r.Host + "/disk/img:v2 could not be found, available tags are v1"; err == nil || err.Error() != want {
		t.Errorf("missing tag: %v, want %s", err, want)
	}
	wrong := "oci://" + r.Host + "/disk/img@sha256:" + strings.Repeat("0", 64)
	if _, err := c.Resolve(ctx, mustRef(t, wrong), "", nil); err == nil || err.Error() != "Image "+wrong+" could not be found." {
		t.Errorf("wrong digest: %v", err)
	}
	// HTTPS is the default: a plain registry is refused unless allowed.
	strict := oci.NewClient(oci.Config{})
	if _, err := strict.Resolve(ctx, mustRef(t, "oci://"+r.Host+"/disk/img:v1"), "", nil); err == nil ||
		!strings.Contains(err.Error(), "HTTP response to HTTPS client") {
		t.Errorf("plain HTTP without permission: %v", err)
	}
}

// TestResolveVerifiesManifestDigest: a registry whose manifest is not
// what its digest says is refused.
func TestResolveVerifiesManifestDigest(t *testing.T) {
	r := ocitest.New(t, ocitest.NoAuth, "", "")
	m, _ := r.PushArtifact(t, "img", "v1", []byte("x"), "application/octet-stream", "x.raw")
	tamper := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &rewriter{ResponseWriter: w}
		r.ServeHTTP(rec, req)
	})
	srv := startHandler(t, tamper)
	c := oci.NewClient(oci.Config{AllowHTTP: true})
	_, err := c.Resolve(context.Background(), mustRef(t, "oci://"+srv+"/img@"+m.Digest), "", nil)
	if err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("tampered manifest: %v", err)
	}
}

func TestResolveAuth(t *testing.T) {
	for _, mode := range []ocitest.Auth{ocitest.BasicAuth, ocitest.BearerAuth} {
		r := ocitest.New(t, mode, "puller", "s3cret")
		m, l := r.PushArtifact(t, "private/img", "v1", []byte("private"), "application/octet-stream", "p.raw")
		c := oci.NewClient(oci.Config{AllowHTTP: true})
		ctx := context.Background()
		ref := mustRef(t, "oci://"+r.Host+"/private/img:v1")
		im, err := c.Resolve(ctx, ref, "", oci.ParseSecret("puller:s3cret"))
		if err != nil || im.BlobDigest != l.Digest || im.ManifestDigest != m.Digest {
			t.Fatalf("auth %d: %+v %v", mode, im, err)
		}
		h, err := c.Authorization(ctx, ref, oci.ParseSecret("puller:s3cret"))
		if err != nil || h == "" {
			t.Fatalf("auth %d: authorization %q %v", mode, h, err)
		}
		// The header pulls the blob, as the agent will.
		req, _ := http.NewRequest("GET", im.URL, nil)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("auth %d: blob pull %v %v", mode, resp, err)
		}
		resp.Body.Close()
		_, err = c.Resolve(ctx, ref, "", oci.ParseSecret("puller:wrong"))
		if err == nil || !strings.Contains(err.Error(), "Not authorized for image") || strings.Contains(err.Error(), "wrong") {
			t.Errorf("auth %d: refused secret: %v", mode, err)
		}
		_, err = c.Resolve(ctx, ref, "", nil)
		if err == nil || !strings.Contains(err.Error(), "requires authentication which has not been provided") {
			t.Errorf("auth %d: no secret: %v", mode, err)
		}
	}
}

func TestResolveTLS(t *testing.T) {
	r, client := ocitest.NewTLS(t, ocitest.BearerAuth, "u", "p")
	_, l := r.PushArtifact(t, "img", "v1", []byte("tls"), "application/octet-stream", "t.raw")
	ctx := context.Background()
	ref := mustRef(t, "oci://"+r.Host+"/img:v1")
	im, err := oci.NewClient(oci.Config{HTTP: client}).Resolve(ctx, ref, "", oci.ParseSecret("u:p"))
	if err != nil || im.BlobDigest != l.Digest || !strings.HasPrefix(im.URL, "https://") {
		t.Fatalf("trusted CA: %+v %v", im, err)
	}
	// An untrusted certificate fails, even with the HTTP fallback (the
	// registry does not speak HTTP).
	_, err = oci.NewClient(oci.Config{AllowHTTP: true}).Resolve(ctx, ref, "", oci.ParseSecret("u:p"))
	if err == nil || !strings.Contains(err.Error(), "Failed to download image") {
		t.Errorf("untrusted CA: %v", err)
	}
}

func TestResolveBootcImage(t *testing.T) {
	r := ocitest.New(t, ocitest.NoAuth, "", "")
	cfg := r.PushBlob(t, "os", []byte(`{"architecture":"amd64","os":"linux","config":{"Labels":{"containers.bootc":"1"}}}`), "application/vnd.oci.image.config.v1+json")
	l1 := r.PushBlob(t, "os", []byte("layer1"), "application/vnd.oci.image.layer.v1.tar+gzip")
	l2 := r.PushBlob(t, "os", []byte("layer2"), "application/vnd.oci.image.layer.v1.tar+gzip")
	r.PushManifest(t, "os", "latest", map[string]any{"schemaVersion": 2, "mediaType": ocitest.MediaManifest,
		"config": cfg, "layers": []ocitest.Descriptor{l1, l2}}, ocitest.MediaManifest)
	im, err := oci.NewClient(oci.Config{AllowHTTP: true}).Resolve(context.Background(), mustRef(t, "oci://"+r.Host+"/os"), "", nil)
	if err != nil || im.DiskFormat != "bootc" || im.Size != cfg.Size+l1.Size+l2.Size {
		t.Errorf("bootc: %+v %v", im, err)
	}
}
