package oci

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Media types of the distribution spec.
const (
	MediaManifest       = "application/vnd.oci.image.manifest.v1+json"
	MediaIndex          = "application/vnd.oci.image.index.v1+json"
	MediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaEmpty          = "application/vnd.oci.empty.v1+json"
)

// maxManifest bounds a manifest or index read from a registry (the
// distribution spec lets registries refuse those over 4 MiB).
const maxManifest = 4 << 20

// Config configures a Client.
type Config struct {
	// HTTP is the client for registries and token services, with its TLS
	// settings (Ironic's [oci]verify_ca: a CA bundle or off); nil is one
	// with the system's roots.
	HTTP *http.Client
	// AllowHTTP falls back to plain HTTP when a registry does not answer
	// over HTTPS (Ironic's [oci]permit_fallback_to_http_transport, off by
	// default).
	AllowHTTP bool
}

// Client talks to OCI registries. Manifests are kept by digest (they are
// immutable), so a redeploy of a pinned image asks the registry only for
// authorization.
type Client struct {
	cfg Config

	mu    sync.Mutex
	cache map[string][]byte // manifest digest → body
	order []string
	plain map[string]bool // registries found to speak only HTTP (AllowHTTP)
}

// cacheEntries bounds the manifest cache (each at most maxManifest; in
// practice a few KiB).
const cacheEntries = 256

// NewClient returns a Client.
func NewClient(cfg Config) *Client {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 60 * time.Second}
	}
	// Never follow a redirect to another host with the registry's
	// Authorization header (Go drops it across hosts; keep it so).
	return &Client{cfg: cfg, cache: map[string][]byte{}, plain: map[string]bool{}}
}

// session is one registry conversation: its base URL and Authorization.
type session struct {
	c      *Client
	ref    Ref
	base   string // scheme://host
	auth   string // Authorization header value, "" for none
	secret *Secret
}

// open finds the registry's scheme (HTTPS, then HTTP when allowed) and
// authenticates as Ironic's OciClient.authenticate does: GET /v2/; a 401
// with Bearer asks the realm's token service for a pull token (with the
// secret as basic credentials), with Basic uses the secret itself.
func (c *Client) open(ctx context.Context, ref Ref, sec *Secret) (*session, error) {
	s := &session{c: c, ref: ref, base: "https://" + ref.Registry, secret: sec}
	c.mu.Lock()
	plain := c.cfg.AllowHTTP && c.plain[ref.Registry]
	c.mu.Unlock()
	var resp *http.Response
	err := errors.New("plain HTTP")
	if !plain {
		resp, err = s.do(ctx, s.base+"/v2/", "", "")
	}
	if err != nil && c.cfg.AllowHTTP {
		// Remembered: a TLS handshake with a plain HTTP server may wait
		// for its timeout.
		s.base = "http://" + ref.Registry
		if resp, err = s.do(ctx, s.base+"/v2/", "", ""); err == nil {
			c.mu.Lock()
			c.plain[ref.Registry] = true
			c.mu.Unlock()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("Failed to download image %s, reason: %v", ref, err)
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		return s, nil
	case http.StatusUnauthorized:
	default:
		return nil, fmt.Errorf("Failed to download image %s, reason: the registry answered %s to %s/v2/", ref, resp.Status, s.base)
	}
	scheme, params := parseChallenge(resp.Header.Get("WWW-Authenticate"))
	switch strings.ToLower(scheme) {
	case "bearer":
		tok, err := s.token(ctx, params)
		if err != nil {
			return nil, err
		}
		s.auth = "Bearer " + tok
	case "basic":
		if sec == nil || sec.Password == "" {
			return nil, authRequired(ref)
		}
		s.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(sec.Username+":"+sec.Password))
		r2, err := s.do(ctx, s.base+"/v2/", "", s.auth)
		if err != nil {
			return nil, fmt.Errorf("Failed to download image %s, reason: %v", ref, err)
		}
		drain(r2)
		if r2.StatusCode != http.StatusOK {
			return nil, notAuthorized(ref)
		}
	default:
		return nil, fmt.Errorf("Failed to download image %s, reason: the registry asks for an unknown authentication scheme %q", ref, scheme)
	}
	return s, nil
}

func authRequired(ref Ref) error {
	return fmt.Errorf("The requested image %s requires authentication which has not been provided. Unable to proceed.", ref)
}

// notAuthorized is Ironic's ImageNotAuthorized, with what to check.
func notAuthorized(ref Ref) error {
	return fmt.Errorf("Not authorized for image %s. The registry refused the pull secret (instance_info image_pull_secret).", ref)
}

// token asks a token service (the challenge's realm) for a pull token of
// the repository, as Ironic's get_bearer_token: with the secret as basic
// credentials when there is one, anonymously otherwise. The realm must be
// HTTPS unless the registry itself is plain HTTP, so credentials never
// leave over a weaker channel than the registry's.
func (s *session) token(ctx context.Context, p map[string]string) (string, error) {
	realm, err := url.Parse(p["realm"])
	if err != nil || realm.Host == "" || (realm.Scheme != "https" && realm.Scheme != "http") {
		return "", fmt.Errorf("Failed to download image %s, reason: the registry names no usable token service (realm %q)", s.ref, p["realm"])
	}
	if realm.Scheme == "http" && strings.HasPrefix(s.base, "https://") {
		return "", fmt.Errorf("Failed to download image %s, reason: the registry's token service %s is not HTTPS", s.ref, realm.Redacted())
	}
	q := realm.Query()
	if p["service"] != "" {
		q.Set("service", p["service"])
	}
	q.Set("scope", "repository:"+s.ref.Repository+":pull")
	realm.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", err
	}
	if s.secret != nil && s.secret.Password != "" {
		req.SetBasicAuth(s.secret.Username, s.secret.Password)
	}
	resp, err := s.c.cfg.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("Failed to download image %s, reason: token service: %v", s.ref, scrub(err))
	}
	defer drain(resp)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		if s.secret == nil {
			return "", authRequired(s.ref)
		}
		return "", notAuthorized(s.ref)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("Failed to download image %s, reason: the token service answered %s", s.ref, resp.Status)
	}
	var body struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return "", fmt.Errorf("Failed to download image %s, reason: the token service's answer is not JSON", s.ref)
	}
	tok := body.Token
	if tok == "" {
		tok = body.AccessToken
	}
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("Failed to download image %s, reason: the token service gave no token", s.ref)
	}
	return tok, nil
}

// parseChallenge reads a WWW-Authenticate header: its scheme and
// key="value" parameters.
func parseChallenge(h string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest != "" {
		rest = strings.TrimLeft(rest, " ,")
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if strings.HasPrefix(v, `"`) {
			end := strings.IndexByte(v[1:], '"')
			if end < 0 {
				params[k] = v[1:]
				break
			}
			params[k], rest = v[1:1+end], v[2+end:]
		} else {
			val, r, _ := strings.Cut(v, ",")
			params[k], rest = strings.TrimSpace(val), r
		}
	}
	return scheme, params
}

// do sends a GET with accept and auth; transport errors come back with
// no URL credentials in them.
func (s *session) do(ctx context.Context, u, accept, auth string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, scrub(err)
	}
	return resp, nil
}

// scrub is a transport error without the request's URL wrapper (the
// message names the operation already).
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// manifest fetches the manifest or index named by reference (a tag or a
// digest) and verifies it: a digest reference must hash to itself, a
// tag's body to the registry's Docker-Content-Digest when it sends one.
// It returns the body, its media type and its digest.
func (s *session) manifest(ctx context.Context, reference string) ([]byte, string, string, error) {
	isDigest := strings.Contains(reference, ":")
	if isDigest {
		if b := s.c.cached(reference); b != nil {
			return b, mediaTypeOf(b, ""), reference, nil
		}
	}
	u := s.base + "/v2/" + s.ref.Repository + "/manifests/" + reference
	resp, err := s.do(ctx, u, strings.Join([]string{MediaIndex, MediaManifest, MediaDockerList, MediaDockerManifest}, ", "), s.auth)
	if err != nil {
		return nil, "", "", fmt.Errorf("Failed to download image %s, reason: %v", s.ref, err)
	}
	defer drain(resp)
	if err := s.status(ctx, resp, reference); err != nil {
		return nil, "", "", err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxManifest+1))
	if err != nil {
		return nil, "", "", fmt.Errorf("Failed to download image %s, reason: reading the manifest: %v", s.ref, err)
	}
	if len(b) > maxManifest {
		return nil, "", "", fmt.Errorf("Failed to download image %s, reason: the manifest is larger than %d bytes", s.ref, maxManifest)
	}
	want := reference
	if !isDigest {
		want = resp.Header.Get("Docker-Content-Digest")
	}
	dg := "sha256:" + hexSum(sha256.New(), b)
	if want != "" {
		got, err := digestOf(want, b)
		if err != nil || got != want {
			return nil, "", "", fmt.Errorf("Failed to download image %s, reason: the manifest's content does not match its digest %s", s.ref, want)
		}
		dg = want
	}
	s.c.store(dg, b)
	return b, mediaTypeOf(b, resp.Header.Get("Content-Type")), dg, nil
}

// status turns a registry's refusal into Ironic's error: 401
// authentication, 404 not found (with the tags there are, for a tag, as
// Ironic's OciImageTagNotFound), 429 rate limit, 5xx temporary.
func (s *session) status(ctx context.Context, resp *http.Response, reference string) error {
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		if s.secret == nil {
			return authRequired(s.ref)
		}
		return notAuthorized(s.ref)
	case resp.StatusCode == http.StatusNotFound:
		if !strings.Contains(reference, ":") {
			if tags, err := s.tags(ctx); err == nil {
				if len(tags) == 0 {
					return fmt.Errorf("Invalid image href Image %s does not have any tags.", s.ref)
				}
				return fmt.Errorf("Image tag %s could not be found, available tags are %s", s.ref, strings.Join(tags, ", "))
			}
		}
		return fmt.Errorf("Image %s could not be found.", s.ref)
	case resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("Rate limit encountered while accessing %s. Please try again later.", s.ref)
	}
	return fmt.Errorf("Failed to download image %s, reason: the registry answered %s", s.ref, resp.Status)
}

// tags lists the repository's tags (first page: enough for a message).
func (s *session) tags(ctx context.Context) ([]string, error) {
	resp, err := s.do(ctx, s.base+"/v2/"+s.ref.Repository+"/tags/list", "application/json", s.auth)
	if err != nil {
		return nil, err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	var body struct {
		Tags []string `json:"tags"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxManifest)).Decode(&body); err != nil {
		return nil, err
	}
	const show = 20
	if len(body.Tags) > show {
		body.Tags = append(body.Tags[:show], "...")
	}
	return body.Tags, nil
}

// BlobURL is the HTTP URL of a blob of the session's repository.
func (s *session) blobURL(digest string) string {
	return s.base + "/v2/" + s.ref.Repository + "/blobs/" + digest
}

func mediaTypeOf(b []byte, header string) string {
	var m struct {
		MediaType string `json:"mediaType"`
	}
	if json.Unmarshal(b, &m) == nil && m.MediaType != "" {
		return m.MediaType
	}
	ct, _, _ := strings.Cut(header, ";")
	return strings.TrimSpace(ct)
}

// digestOf is b's digest in the algorithm of want (sha256 or sha512).
func digestOf(want string, b []byte) (string, error) {
	algo, _, _ := strings.Cut(want, ":")
	switch algo {
	case "sha256":
		return "sha256:" + hexSum(sha256.New(), b), nil
	case "sha512":
		return "sha512:" + hexSum(sha512.New(), b), nil
	}
	return "", fmt.Errorf("unsupported digest algorithm %q", algo)
}

func hexSum(h hash.Hash, b []byte) string {
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Client) cached(dg string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cache[dg]
}

func (c *Client) store(dg string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cache[dg]; ok {
		return
	}
	if len(c.order) >= cacheEntries {
		delete(c.cache, c.order[0])
		c.order = c.order[1:]
	}
	c.cache[dg] = b
	c.order = append(c.order, dg)
}
