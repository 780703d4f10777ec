package ipa

// What the agent and the conductor share beyond the commands' shapes: the
// rescue password's SHA-512 crypt hash (HashRescuePassword, IsCryptHash;
// IsShadowHash for what the agent accepts, as rescue.finalize_rescue
// carries it) and the parameter names of the agent's image writer.

// WriteImage parameters: what the agent's image writer takes, read from
// prepare_image's image_info by the agent (internal/agent).
const (
	ParamImageSource  = "image_source"  // http(s):// URL, file:// URL or a local path
	ParamChecksum     = "checksum"      // hex digest
	ParamChecksumAlgo = "checksum_algo" // sha256, sha512 (md5 only when allowed)
)

// FinalizeRescue parameters (IPA's rescue.finalize_rescue).
const (
	ParamRescuePassword = "rescue_password" // a SHA-512 crypt hash, never the password
	ParamHashed         = "hashed"          // always true
)

// RescuePasswordFile is where the agent keeps the rescue password's hash,
// under its root directory.
const RescuePasswordFile = "etc/anvil-rescue-password"
