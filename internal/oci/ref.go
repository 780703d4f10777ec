package oci

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// Scheme prefixes an image_source that names an image in a container
// registry.
const Scheme = "oci://"

// Ref is an oci:// image reference: oci://registry/repository:tag or
// oci://registry/repository@algo:hex (a tag absent is "latest", as
// Ironic's _image_tag_from_url).
type Ref struct {
	Registry   string // host[:port]
	Repository string // path, no leading slash
	Tag        string // "" when Digest is set
	Digest     string // algo:hex, lower case
}

// IsRef reports whether an image_source is an oci:// URL (Ironic's
// is_container_registry_url).
func IsRef(s string) bool { return strings.HasPrefix(s, Scheme) }

// Error texts of Ironic's image exceptions.
func refFailed(href, reason string) error {
	return fmt.Errorf("Validation of image href %s failed, reason: %s", href, reason)
}

// ErrNotSpecific is Ironic's OciImageNotSpecific, for a digest of an
// algorithm it does not know.
func notSpecific(href string) error {
	return fmt.Errorf("The requested image (%s) was not specific. Please supply a full URL mapping to the manifest to be utilized for the file download.", href)
}

// ParseRef parses an oci:// reference with Ironic's checks of the digest
// (OciImageService._validate_url_is_specific): sha256 of 64 hex digits or
// sha512 of 128; and the distribution spec's grammar of repository names
// and tags, so nothing a user wrote reaches a URL path unchecked.
func ParseRef(s string) (Ref, error) {
	if !IsRef(s) {
		return Ref{}, refFailed(s, "not an oci:// URL")
	}
	rest := s[len(Scheme):]
	host, path, ok := strings.Cut(rest, "/")
	if !ok || host == "" || path == "" {
		return Ref{}, refFailed(s, "an OCI image URL is oci://registry/repository:tag or oci://registry/repository@digest")
	}
	if !validHost(host) {
		return Ref{}, refFailed(s, fmt.Sprintf("invalid registry host %q", host))
	}
	r := Ref{Registry: host}
	if repo, dg, ok := strings.Cut(path, "@"); ok {
		algo, value, ok := strings.Cut(dg, ":")
		if !ok {
			return Ref{}, refFailed(s, "Lacking required digest value")
		}
		algo, value = strings.ToLower(algo), strings.ToLower(value)
		want := map[string]int{"sha256": 64, "sha512": 128}[algo]
		if want == 0 {
			return Ref{}, notSpecific(s)
		}
		if _, err := hex.DecodeString(value); err != nil || len(value) != want {
			return Ref{}, refFailed(s, "Manifest digest length incorrect and does not match the expected lenngth of the algorithm.")
		}
		r.Repository, r.Digest = repo, algo+":"+value
	} else {
		r.Repository, r.Tag = path, "latest"
		if i := strings.LastIndexByte(path, ':'); i >= 0 {
			r.Repository, r.Tag = path[:i], path[i+1:]
		}
		if !validTag(r.Tag) {
			return Ref{}, refFailed(s, fmt.Sprintf("invalid tag %q", r.Tag))
		}
	}
	if !validRepository(r.Repository) {
		return Ref{}, refFailed(s, fmt.Sprintf("invalid repository name %q", r.Repository))
	}
	return r, nil
}

// String is the reference as an oci:// URL.
func (r Ref) String() string {
	if r.Digest != "" {
		return Scheme + r.Registry + "/" + r.Repository + "@" + r.Digest
	}
	return Scheme + r.Registry + "/" + r.Repository + ":" + r.Tag
}

// WithDigest is the reference pinned to a manifest digest (Ironic's
// oci_image_manifest_url).
func (r Ref) WithDigest(d string) Ref { r.Tag, r.Digest = "", d; return r }

// reference is the manifest's name in the registry's URL: tag or digest.
func (r Ref) reference() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// validHost: a host name or IPv4 address, an optional port, or a bracketed
// IPv6 address.
func validHost(h string) bool {
	if len(h) > 255 {
		return false
	}
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		for _, c := range h[1:end] {
			if !isHex(c) && c != ':' && c != '.' {
				return false
			}
		}
		h = "x" + h[end+1:]
	}
	name, port, hasPort := strings.Cut(h, ":")
	if name == "" || (hasPort && (port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "")) {
		return false
	}
	for _, c := range name {
		if !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// validRepository is the distribution spec's
// [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*.
func validRepository(p string) bool {
	if p == "" || len(p) > 255 {
		return false
	}
	for _, comp := range strings.Split(p, "/") {
		if comp == "" || !isLowerAlnum(rune(comp[0])) || !isLowerAlnum(rune(comp[len(comp)-1])) {
			return false
		}
		for i := 0; i < len(comp); i++ {
			c := rune(comp[i])
			if isLowerAlnum(c) {
				continue
			}
			// A separator run: ".", "_", "__" or "-"+.
			j := i
			for j < len(comp) && !isLowerAlnum(rune(comp[j])) {
				j++
			}
			sep := comp[i:j]
			if sep != "." && sep != "_" && sep != "__" && strings.Trim(sep, "-") != "" {
				return false
			}
			i = j - 1
		}
	}
	return true
}

// validTag is the distribution spec's [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}.
func validTag(t string) bool {
	if t == "" || len(t) > 128 || !(isAlnum(rune(t[0])) || t[0] == '_') {
		return false
	}
	for _, c := range t {
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c rune) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }
func isAlnum(c rune) bool      { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') }
func isHex(c rune) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// Secret is a pull secret: image_pull_secret, "user:password" or a bare
// token (Ironic's get_image_service_auth_override).
type Secret struct {
	Username, Password string
}

// ParseSecret reads image_pull_secret as Ironic does: "user:pass" is basic
// credentials (for a token service too), anything else a password (a
// token) without a user name; "" is none.
func ParseSecret(s string) *Secret {
	if s == "" {
		return nil
	}
	if u, p, ok := strings.Cut(s, ":"); ok {
		return &Secret{Username: u, Password: p}
	}
	return &Secret{Password: s}
}
