package ipa

// Parameters of the image command beyond the image and its checksum, named
// as the keys of IPA's prepare_image image_info (the agent also reads them
// from an "image_info" object, as IPA receives them).
const (
	ParamImageInfo       = "image_info"       // IPA's form: the parameters below inside an object
	ParamURLs            = "urls"             // IPA's image_info: the image's URLs (the first is used)
	ParamOSHashAlgo      = "os_hash_algo"     // IPA's image_info: sha256, sha512
	ParamOSHashValue     = "os_hash_value"    // IPA's image_info: hex digest
	ParamDiskFormat      = "disk_format"      // raw or qcow2 ("": by content)
	ParamImageType       = "image_type"       // whole-disk (default) or partition
	ParamRootMB          = "root_mb"          // partition images: root partition size (MiB)
	ParamSwapMB          = "swap_mb"          // partition images: swap partition size (MiB, 0: none)
	ParamEphemeralMB     = "ephemeral_mb"     // partition images: ephemeral partition size (MiB, 0: none)
	ParamEphemeralFormat = "ephemeral_format" // partition images: the ephemeral partition's filesystem
	ParamDiskLabel       = "disk_label"       // gpt or msdos ("": gpt for uefi, msdos for bios)
	ParamBootMode        = "deploy_boot_mode" // uefi or bios
	ParamBootOption      = "boot_option"      // local or netboot
	ParamRootDevice      = "root_device"      // root device hints (Ironic's)
	ParamConfigDrive     = "configdrive"      // gzip+base64 config-2 image, or a URL to one
	// ParamAuthorization is IPA's image_request_authorization: the
	// Authorization header of the image's GET, base64 encoded (a
	// registry's pull token, from an oci:// image).
	ParamAuthorization = "image_request_authorization"
	// ParamCompression is the image's compression, zstd or gzip ("":
	// none), which Anvil's agent undoes as it writes (Anvil's: IPA takes
	// no compressed images; Ironic decompresses them in its image cache).
	// The checksum is the compressed stream's (an OCI blob's digest).
	ParamCompression = "image_compression_type"
)

// Image types (instance_info.image_type).
const (
	ImageWholeDisk = "whole-disk"
	ImagePartition = "partition"
)
