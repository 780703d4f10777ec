package ipa

import (
	"crypto/md5" //nolint:gosec // only when the operator allows md5 checksums
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// Checksum is an image digest with its algorithm: md5, sha256 or sha512.
type Checksum struct {
	Algo  string
	Value string // lower-case hex
}

// String is "algo:hex".
func (c Checksum) String() string { return c.Algo + ":" + c.Value }

// NewHash returns a hash of c's algorithm.
func (c Checksum) NewHash() hash.Hash {
	switch c.Algo {
	case "md5":
		return md5.New() //nolint:gosec
	case "sha512":
		return sha512.New()
	}
	return sha256.New()
}

// Matches reports whether a computed digest is c's.
func (c Checksum) Matches(sum []byte) bool { return hex.EncodeToString(sum) == c.Value }

// hexLen is each algorithm's digest length in hex digits.
var hexLen = map[string]int{"md5": 32, "sha256": 64, "sha512": 128}

// ErrNoChecksum is returned when no checksum is given at all.
var ErrNoChecksum = errors.New("no image checksum given")

// ParseChecksum is the one checksum policy: value is hex, optionally
// prefixed "algo:"; algo names the algorithm, or, empty, the digest's length
// does (32 hex digits md5, 64 sha256, 128 sha512, as IPA's
// _get_algorithm_by_length); md5 only when allowMD5 (Ironic's
// [agent]allow_md5_checksum, IPA's md5_enabled).
func ParseChecksum(algo, value string, allowMD5 bool) (Checksum, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return Checksum{}, ErrNoChecksum
	}
	if a, v, ok := strings.Cut(value, ":"); ok {
		if algo != "" && !strings.EqualFold(algo, a) {
			return Checksum{}, fmt.Errorf("checksum %q: algorithm %s differs from %s", value, a, algo)
		}
		algo, value = a, v
	}
	_, err := hex.DecodeString(value)
	isHex := err == nil
	algo = strings.ToLower(algo)
	if algo == "" {
		if !isHex {
			return Checksum{}, fmt.Errorf("image checksum %q is not hexadecimal", value)
		}
		for a, n := range hexLen {
			if n == len(value) {
				algo = a
			}
		}
		if algo == "" {
			return Checksum{}, fmt.Errorf("image checksum of %d hex digits matches no supported algorithm (sha256, sha512)", len(value))
		}
	}
	n, ok := hexLen[algo]
	switch {
	case !ok:
		return Checksum{}, fmt.Errorf("unsupported image hash algorithm %q (use sha256 or sha512)", algo)
	case algo == "md5" && !allowMD5:
		return Checksum{}, errors.New("md5 image checksums are not allowed; use sha256 or sha512")
	case !isHex || n != len(value):
		return Checksum{}, fmt.Errorf("image checksum %q is not hexadecimal of %d hex digits for %s", value, n, algo)
	}
	return Checksum{Algo: algo, Value: strings.ToLower(value)}, nil
}

// InstanceChecksum is the conductor's decision for a node's image, from
// instance_info: image_os_hash_algo and image_os_hash_value when both are
// set (Ironic's precedence), else image_checksum.
func InstanceChecksum(info map[string]any, allowMD5 bool) (Checksum, error) {
	return pairOrLegacy(info, "image_os_hash_algo", "image_os_hash_value", "image_checksum", allowMD5)
}

// ImageInfoChecksum is what an agent verifies, from prepare_image's
// image_info: os_hash_algo and os_hash_value, else checksum (whose
// algorithm its length tells, as newer IPA reads it).
func ImageInfoChecksum(imageInfo map[string]any, allowMD5 bool) (Checksum, error) {
	return pairOrLegacy(imageInfo, "os_hash_algo", "os_hash_value", "checksum", allowMD5)
}

func pairOrLegacy(m map[string]any, algoKey, valueKey, legacyKey string, allowMD5 bool) (Checksum, error) {
	algo, _ := m[algoKey].(string)
	value, _ := m[valueKey].(string)
	if algo != "" && value != "" {
		return ParseChecksum(algo, value, allowMD5)
	}
	legacy, _ := m[legacyKey].(string)
	c, err := ParseChecksum("", legacy, allowMD5)
	if errors.Is(err, ErrNoChecksum) {
		return c, fmt.Errorf("%w: %s (or %s and %s) is required", err, legacyKey, algoKey, valueKey)
	}
	return c, err
}
