package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Image is the artifact chosen for a deploy: what Ironic's
// identify_specific_image returns, under its instance_info names (Fields).
type Image struct {
	URL            string // the blob's HTTP(S) URL
	Size           int64
	Filename       string // org.opencontainers.image.title
	Checksum       string // the blob digest's hex
	BlobDigest     string // algo:hex
	ManifestDigest string
	MediaType      string
	Compression    string // zstd, gzip or ""
	DiskFormat     string // raw, qcow2, "" (unknown: by the agent), or bootc
	ManifestURL    string // oci://registry/repo@manifest-digest
}

// Fields are the instance_info keys Ironic sets from the chosen artifact
// (deploy_utils.build_instance_info_for_deploy), for the API to show what
// a deploy used. The checksum is image_checksum alone, as Ironic's (its
// length names sha256 or sha512), so nothing of the registry's outlives a
// change of image_source to another kind of image.
func (im Image) Fields() map[string]any {
	m := map[string]any{
		"image_url":                       im.URL,
		"image_size":                      im.Size,
		"image_checksum":                  im.Checksum,
		"image_container_manifest_digest": im.ManifestDigest,
		"image_container_blob_digest":     im.BlobDigest,
		"image_media_type":                nilIfEmpty(im.MediaType),
		"image_compression_type":          nilIfEmpty(im.Compression),
		"image_filename":                  nilIfEmpty(im.Filename),
		"oci_image_manifest_url":          im.ManifestURL,
	}
	if im.DiskFormat != "" {
		m["image_disk_format"] = im.DiskFormat
	}
	return m
}

// FieldNames are Fields' keys and the checksum keys that would override
// image_checksum: what a deploy clears before it resolves.
var FieldNames = []string{"image_url", "image_size", "image_checksum", "image_os_hash_algo", "image_os_hash_value",
	"image_container_manifest_digest", "image_container_blob_digest", "image_media_type", "image_compression_type",
	"image_filename", "oci_image_manifest_url"}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// descriptor, manifest and index are the parts of the image spec's JSON
// that the choice reads.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type manifest struct {
	MediaType    string       `json:"mediaType"`
	ArtifactType string       `json:"artifactType"`
	Config       descriptor   `json:"config"`
	Layers       []descriptor `json:"layers"`
	Manifests    []descriptor `json:"manifests"`
}

// isIndex: an image index (or Docker manifest list).
func isIndex(mediaType string, m manifest) bool {
	return mediaType == MediaIndex || mediaType == MediaDockerList || (mediaType == "" && len(m.Manifests) > 0)
}

// isArtifact is Ironic's is_oci_artifact_image: artifactType set, or the
// empty config of ORAS.
func (m manifest) isArtifact() bool {
	return m.ArtifactType != "" || m.Config.MediaType == MediaEmpty
}

// Resolve picks the disk image an oci:// reference names, as Ironic's
// OciImageService.identify_specific_image for an agent that downloads the
// image itself (image_download_source http): a digest reference is the
// artifact's manifest itself (an index digest is chosen from like a tag);
// a tag's index is filtered by architecture (amd64 and x86_64, arm64 and
// aarch64 alike) and ordered by the "disktype" annotation (raw, applehv,
// qcow2, qemu; none last; others skipped), and the first single-layer
// manifest wins. A container image without a disk type is a bootc image
// (DiskFormat "bootc"), which the caller decides about.
func (c *Client) Resolve(ctx context.Context, ref Ref, arch string, sec *Secret) (Image, error) {
	s, err := c.open(ctx, ref, sec)
	if err != nil {
		return Image{}, err
	}
	body, mt, dg, err := s.manifest(ctx, ref.reference())
	if err != nil {
		return Image{}, err
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return Image{}, fmt.Errorf("Invalid image href %s. The manifest is not JSON: %v", ref, err)
	}
	if !isIndex(mt, m) {
		// A single manifest (a digest reference, or a tag without an
		// index): its one layer, of a disk type nobody said.
		return s.pick(ctx, descriptor{Digest: dg}, m, "")
	}
	cands := filterManifests(m.Manifests, arch)
	if len(cands) > maxCandidates {
		cands = cands[:maxCandidates] // best first: a registry cannot keep a deploy fetching
	}
	if len(cands) == 0 {
		return Image{}, fmt.Errorf("Invalid image href %s. No manifest of its index is a disk image for architecture %q.", ref, arch)
	}
	for _, d := range cands {
		if !validDigest(d.Digest) {
			continue
		}
		b, _, _, err := s.manifest(ctx, d.Digest)
		if err != nil {
			return Image{}, err
		}
		var sub manifest
		if err := json.Unmarshal(b, &sub); err != nil {
			return Image{}, fmt.Errorf("Invalid image href %s. The manifest %s is not JSON: %v", ref, d.Digest, err)
		}
		if len(sub.Layers) != 1 && d.disktype() != "" || len(sub.Layers) != 1 && sub.isArtifact() {
			continue // a container's layers, not a disk image artifact
		}
		return s.pick(ctx, d, sub, d.disktype())
	}
	return Image{}, fmt.Errorf("Invalid image href %s. No manifest of its index holds a single-layer disk image.", ref)
}

// pick is the image of manifest m (its descriptor d) of disk type dt.
func (s *session) pick(_ context.Context, d descriptor, m manifest, dt string) (Image, error) {
	ref := s.ref
	mref := ref.WithDigest(d.Digest)
	if dt == "" && !m.isArtifact() {
		var size int64 = m.Config.Size
		for _, l := range m.Layers {
			size += l.Size
		}
		return Image{DiskFormat: "bootc", ManifestDigest: d.Digest, ManifestURL: mref.String(), Size: size}, nil
	}
	if len(m.Layers) != 1 {
		return Image{}, fmt.Errorf("Validation of image href %s failed, reason: Incorrect number of layers. Expected 1 layer, found %d layers.", mref, len(m.Layers))
	}
	l := m.Layers[0]
	if !validDigest(l.Digest) {
		return Image{}, fmt.Errorf("Validation of image href %s failed, reason: the layer's digest %q is not sha256 or sha512 hex", mref, l.Digest)
	}
	_, sum, _ := strings.Cut(l.Digest, ":")
	im := Image{URL: s.blobURL(l.Digest), Size: l.Size, Checksum: sum, BlobDigest: l.Digest, ManifestDigest: d.Digest,
		MediaType: l.MediaType, Filename: l.Annotations["org.opencontainers.image.title"], ManifestURL: mref.String()}
	switch {
	case strings.HasSuffix(l.MediaType, "zstd"):
		im.Compression = "zstd"
	case strings.HasSuffix(l.MediaType, "gzip"):
		im.Compression = "gzip"
	}
	switch dt {
	case "raw", "applehv":
		im.DiskFormat = "raw"
	case "qcow2", "qemu":
		im.DiskFormat = "qcow2"
	}
	return im, nil
}

// Authorization is the Authorization header value the agent sends with
// the blob's GET ("" when the registry needs none), obtained afresh (a
// token service's tokens are short-lived): Ironic hands IPA its cached
// header as image_request_authorization.
func (c *Client) Authorization(ctx context.Context, ref Ref, sec *Secret) (string, error) {
	s, err := c.open(ctx, ref, sec)
	if err != nil {
		return "", err
	}
	return s.auth, nil
}

func (d descriptor) disktype() string { return d.Annotations["disktype"] }

// maxCandidates bounds the manifests of an index fetched in search of a
// disk image.
const maxCandidates = 32

// priority is Ironic's disk_format_priority for an agent download.
var priority = map[string]int{"raw": 1, "applehv": 2, "qcow2": 3, "qemu": 4}

// filterManifests is Ironic's _filter_manifests: architecture, then disk
// type preference, stable.
func filterManifests(ms []descriptor, arch string) []descriptor {
	var archs []string
	switch arch {
	case "":
	case "x86_64", "amd64":
		archs = []string{"x86_64", "amd64"}
	case "arm64", "aarch64":
		archs = []string{"aarch64", "arm64"}
	default:
		archs = []string{arch}
	}
	var out []descriptor
	for _, m := range ms {
		if archs != nil && m.Platform != nil && m.Platform.Architecture != "" && !slices.Contains(archs, m.Platform.Architecture) {
			continue
		}
		if dt := m.disktype(); dt != "" && priority[dt] == 0 {
			continue
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b descriptor) int { return rank(a) - rank(b) })
	return out
}

func rank(d descriptor) int {
	if p := priority[d.disktype()]; p > 0 {
		return p
	}
	return 100
}

// validDigest: sha256 or sha512 of the right number of lower-case hex
// digits (what may go into a URL path).
func validDigest(d string) bool {
	algo, v, ok := strings.Cut(d, ":")
	n := map[string]int{"sha256": 64, "sha512": 128}[algo]
	if !ok || n == 0 || len(v) != n {
		return false
	}
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
