package agent

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// ImageRequest is what the image command (write_image, IPA's
// standby.prepare_image) asks for. New settings become fields here, so the
// command's handler keeps one signature.
type ImageRequest struct {
	Source      string // http(s) URL, file:// URL or local path
	Checksum    string // hex digest
	Algo        string // sha256, sha512, md5 ("": by the digest's length)
	DiskFormat  string // raw, qcow2, or "" (by the image's first bytes)
	ImageType   string // ipa.ImageWholeDisk or ipa.ImagePartition
	RootMB      int64
	SwapMB      int64
	EphemeralMB int64
	DiskLabel   string // gpt, msdos, or "" (by BootMode)
	BootMode    string // uefi or bios
	BootOption  string // local or netboot
	RootDevice  map[string]any
	ConfigDrive string // gzip+base64 or a URL; "" for none
	// EphemeralFormat is the ephemeral partition's filesystem (one of
	// disk.EphemeralFormats; "" for ext4).
	EphemeralFormat string
	// Authorization is the image GET's Authorization header ("" for none).
	Authorization string
	// Compression is zstd, gzip or "" (none): the checksum and size are
	// the compressed stream's.
	Compression string
}

// ParseImageRequest reads the command's parameters: Anvil's flat form
// (image_source, checksum, checksum_algo and the ipa.Param* keys) or
// IPA's (image_info with urls, os_hash_algo/os_hash_value or checksum, and
// configdrive beside it).
func ParseImageRequest(p map[string]any) (ImageRequest, error) {
	info := p
	if ii, ok := p[ipa.ParamImageInfo].(map[string]any); ok {
		info = ii
	}
	str := func(k string) string { s, _ := info[k].(string); return s }
	r := ImageRequest{
		Source: str(ipa.ParamImageSource), Checksum: str(ipa.ParamChecksum), Algo: str(ipa.ParamChecksumAlgo),
		DiskFormat: strings.ToLower(str(ipa.ParamDiskFormat)), ImageType: str(ipa.ParamImageType),
		DiskLabel: str(ipa.ParamDiskLabel), BootMode: str(ipa.ParamBootMode), BootOption: str(ipa.ParamBootOption),
		EphemeralFormat: str(ipa.ParamEphemeralFormat),
	}
	if urls, ok := info[ipa.ParamURLs].([]any); ok && r.Source == "" && len(urls) > 0 {
		r.Source, _ = urls[0].(string)
	}
	if v := str(ipa.ParamOSHashValue); v != "" {
		r.Checksum, r.Algo = v, str(ipa.ParamOSHashAlgo)
	}
	if r.Source == "" {
		return r, errors.New("write_image: image_source is missing")
	}
	if a := str(ipa.ParamAuthorization); a != "" {
		b, err := base64.StdEncoding.DecodeString(a)
		if err != nil || strings.ContainsAny(string(b), "\r\n") {
			return r, errors.New("write_image: image_request_authorization is not a base64 header value")
		}
		r.Authorization = string(b)
	}
	switch r.Compression = strings.ToLower(str(ipa.ParamCompression)); r.Compression {
	case "", "zstd", "gzip":
	default:
		return r, fmt.Errorf("write_image: image_compression_type %q is not supported (zstd or gzip)", r.Compression)
	}
	var err error
	for _, f := range []struct {
		key string
		dst *int64
	}{{ipa.ParamRootMB, &r.RootMB}, {ipa.ParamSwapMB, &r.SwapMB}, {ipa.ParamEphemeralMB, &r.EphemeralMB}} {
		if *f.dst, err = intParam(info, f.key); err != nil {
			return r, err
		}
	}
	if hints, ok := info[ipa.ParamRootDevice].(map[string]any); ok {
		r.RootDevice = hints
	} else if info[ipa.ParamRootDevice] != nil {
		return r, errors.New("write_image: root_device must be an object of root device hints")
	}
	cd := p[ipa.ParamConfigDrive]
	if cd == nil {
		cd = info[ipa.ParamConfigDrive]
	}
	switch c := cd.(type) {
	case nil:
	case string:
		r.ConfigDrive = c
	default:
		return r, errors.New("write_image: configdrive must be a gzip+base64 string or a URL (the conductor builds the image from an object)")
	}
	switch r.ImageType {
	case "":
		r.ImageType = ipa.ImageWholeDisk
	case ipa.ImageWholeDisk, ipa.ImagePartition:
	default:
		return r, fmt.Errorf("write_image: unknown image_type %q (whole-disk or partition)", r.ImageType)
	}
	switch r.DiskFormat {
	case "", "raw", "qcow2":
	default:
		return r, fmt.Errorf("write_image: disk_format %q is not supported (raw or qcow2)", r.DiskFormat)
	}
	if r.ImageType == ipa.ImagePartition && r.RootMB <= 0 {
		return r, errors.New("write_image: a partition image needs root_mb, the root partition's size")
	}
	return r, nil
}

// intParam reads a non-negative integer given as a JSON number or string.
func intParam(m map[string]any, k string) (int64, error) {
	switch v := m[k].(type) {
	case nil:
		return 0, nil
	case float64:
		if v >= 0 && v == float64(int64(v)) {
			return int64(v), nil
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("write_image: %s must be a non-negative integer, got %v", k, m[k])
}
