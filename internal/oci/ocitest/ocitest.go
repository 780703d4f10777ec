// Package ocitest runs an OCI registry in the test's process
// (go-containerregistry's pkg/registry) on a loopback port, optionally
// behind basic authentication or a bearer token service, and pushes disk
// image artifacts to it the way ORAS and Ironic's documentation lay them
// out (an empty config, one layer, a "disktype" annotation in the index).
package ocitest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Auth is how the registry wants its pulls authenticated.
type Auth int

const (
	NoAuth Auth = iota
	BasicAuth
	BearerAuth // a token service at /token, taking basic credentials
)

// Registry is a running test registry.
type Registry struct {
	Host string // 127.0.0.1:port
	URL  string // http://127.0.0.1:port (https:// from NewTLS)
	// CAPEM is the PEM certificate that verifies a NewTLS registry.
	CAPEM []byte

	inner http.Handler
	auth  Auth
	user  string
	pass  string

	mu     sync.Mutex
	tokens map[string]bool
	// gets counts GETs of blobs and manifests by "blobs/<digest>" and
	// "manifests/<reference>".
	gets map[string]int
}

// New starts a registry; user and pass are its pull credentials (for
// BasicAuth and BearerAuth).
func New(t testing.TB, auth Auth, user, pass string) *Registry {
	t.Helper()
	r := &Registry{inner: registry.New(registry.Logger(log.New(io.Discard, "", 0))), auth: auth, user: user, pass: pass,
		tokens: map[string]bool{}, gets: map[string]int{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Gets is how many times "blobs/<digest>" or "manifests/<reference>" was
// fetched.
func (r *Registry) Gets(what string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets[what]
}

func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/token" && r.auth == BearerAuth {
		u, p, ok := req.BasicAuth()
		if !ok || u != r.user || p != r.pass || !strings.HasPrefix(req.URL.Query().Get("scope"), "repository:") {
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		tok := hex.EncodeToString(b)
		r.mu.Lock()
		r.tokens[tok] = true
		r.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_in": 300})
		return
	}
	if !r.authorized(req) {
		switch r.auth {
		case BasicAuth:
			w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
		case BearerAuth:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="ocitest"`, r.URL))
		}
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return
	}
	if req.Method == http.MethodGet {
		for _, kind := range []string{"/blobs/", "/manifests/"} {
			if i := strings.LastIndex(req.URL.Path, kind); i >= 0 {
				r.mu.Lock()
				r.gets[req.URL.Path[i+1:]]++
				r.mu.Unlock()
			}
		}
	}
	r.inner.ServeHTTP(w, req)
}

func (r *Registry) authorized(req *http.Request) bool {
	h := req.Header.Get("Authorization")
	switch r.auth {
	case BasicAuth:
		return h == "Basic "+base64.StdEncoding.EncodeToString([]byte(r.user+":"+r.pass))
	case BearerAuth:
		r.mu.Lock()
		defer r.mu.Unlock()
		return strings.HasPrefix(h, "Bearer ") && r.tokens[strings.TrimPrefix(h, "Bearer ")]
	}
	return true
}

// Descriptor is an image spec descriptor.
type Descriptor struct {
	MediaType    string            `json:"mediaType"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Platform     *Platform         `json:"platform,omitempty"`
}

// Platform of an index entry.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// PushBlob uploads data (bypassing authentication) and returns its
// descriptor.
func (r *Registry) PushBlob(t testing.TB, repo string, data []byte, mediaType string) Descriptor {
	t.Helper()
	sum := sha256.Sum256(data)
	dg := "sha256:" + hex.EncodeToString(sum[:])
	rec := r.direct(t, http.MethodPost, "/v2/"+repo+"/blobs/uploads/", nil, "")
	if rec.Code != http.StatusAccepted {
		t.Fatalf("blob upload start: %d %s", rec.Code, rec.Body)
	}
	loc := rec.Header().Get("Location")
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	rec = r.direct(t, http.MethodPut, loc+sep+"digest="+dg, data, "application/octet-stream")
	if rec.Code != http.StatusCreated {
		t.Fatalf("blob upload: %d %s", rec.Code, rec.Body)
	}
	return Descriptor{MediaType: mediaType, Digest: dg, Size: int64(len(data))}
}

// PushManifest uploads a manifest or index under reference (a tag, or ""
// for none) and returns its descriptor.
func (r *Registry) PushManifest(t testing.TB, repo, reference string, m any, mediaType string) Descriptor {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	dg := "sha256:" + hex.EncodeToString(sum[:])
	if reference == "" {
		reference = dg
	}
	rec := r.direct(t, http.MethodPut, "/v2/"+repo+"/manifests/"+reference, b, mediaType)
	if rec.Code != http.StatusCreated {
		t.Fatalf("manifest upload: %d %s", rec.Code, rec.Body)
	}
	return Descriptor{MediaType: mediaType, Digest: dg, Size: int64(len(b))}
}

// Media types.
const (
	MediaManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaIndex    = "application/vnd.oci.image.index.v1+json"
	MediaEmpty    = "application/vnd.oci.empty.v1+json"
)

// PushArtifact uploads data as a one-layer artifact (ORAS's layout: the
// empty config, the layer's title annotation) and returns the manifest's
// and the layer's descriptors. reference may be "" (by digest only).
func (r *Registry) PushArtifact(t testing.TB, repo, reference string, data []byte, layerType, title string) (manifest, layer Descriptor) {
	t.Helper()
	cfg := r.PushBlob(t, repo, []byte("{}"), MediaEmpty)
	layer = r.PushBlob(t, repo, data, layerType)
	layer.Annotations = map[string]string{"org.opencontainers.image.title": title}
	m := map[string]any{"schemaVersion": 2, "mediaType": MediaManifest, "artifactType": "application/vnd.unknown.artifact.v1",
		"config": cfg, "layers": []Descriptor{layer}}
	return r.PushManifest(t, repo, reference, m, MediaManifest), layer
}

// PushIndex uploads an index of the given manifests under tag.
func (r *Registry) PushIndex(t testing.TB, repo, tag string, manifests ...Descriptor) Descriptor {
	t.Helper()
	return r.PushManifest(t, repo, tag, map[string]any{"schemaVersion": 2, "mediaType": MediaIndex, "manifests": manifests}, MediaIndex)
}

func (r *Registry) direct(t testing.TB, method, path string, body []byte, ct string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	r.inner.ServeHTTP(rec, req)
	return rec
}

// NewTLS is New over HTTPS with httptest's certificate; the client
// returned trusts it.
func NewTLS(t testing.TB, auth Auth, user, pass string) (*Registry, *http.Client) {
	t.Helper()
	r := &Registry{inner: registry.New(registry.Logger(log.New(io.Discard, "", 0))), auth: auth, user: user, pass: pass,
		tokens: map[string]bool{}, gets: map[string]int{}}
	srv := httptest.NewTLSServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	r.Host = strings.TrimPrefix(srv.URL, "https://")
	r.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return r, srv.Client()
}

// Tokens are the bearer tokens the token service issued (for tests that
// look for them where they must not be).
func (r *Registry) Tokens() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for t := range r.tokens {
		out = append(out, t)
	}
	return out
}
