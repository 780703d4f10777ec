// Package agentapi is the wire contract between the conductor and the agent
// that runs on a machine being provisioned: the command API's documents
// (IPA-style) and how the one-time agent token is turned into the values
// each side stores or sends.
//
// The token is returned in plain text only once, by the lookup that created
// it. The conductor keeps two derived values and never the token itself:
// HeartbeatHash (checks the agent's heartbeats) and CommandKey (what the
// conductor presents to the agent's command API). A copy of the database
// thus cannot forge heartbeats.
package agentapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// driver_internal_info keys the conductor keeps for an agent-driven node.
const (
	KeyTokenHash     = "agent_secret_token"   // HeartbeatHash of the issued token
	KeyCommandKey    = "agent_command_token"  // CommandKey of the issued token
	KeyTokenRequired = "agent_token_required" // a heartbeat must carry a token
	KeyURL           = "agent_url"            // the agent's callback_url
	KeyVersion       = "agent_version"
)

// MaskedToken is what a lookup answers once the token was handed out.
const MaskedToken = "******"

// HeaderToken carries CommandKey on requests to the agent's command API.
const HeaderToken = "X-Agent-Token"

// NewToken returns a fresh random token (256 bits, URL-safe).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics on a broken source)
	return base64.RawURLEncoding.EncodeToString(b)
}

// HeartbeatHash is the stored form of a token, checked against heartbeats.
func HeartbeatHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CommandKey is the value the conductor sends to the agent's command API;
// the agent derives it from its token.
func CommandKey(token string) string {
	sum := sha256.Sum256([]byte("anvil-agent-command\x00" + token))
	return hex.EncodeToString(sum[:])
}

// Equal compares two secrets in constant time.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// CheckHeartbeat reports whether token matches the stored HeartbeatHash.
func CheckHeartbeat(stored, token string) bool {
	if stored == "" || token == "" || !strings.HasPrefix(stored, "sha256:") {
		return false
	}
	return Equal(stored, HeartbeatHash(token))
}

// Command statuses, as IPA reports them.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
)

// Command names the agent runs.
const (
	CmdGetSteps             = "get_steps"
	CmdWriteImage           = "write_image"
	CmdEraseDevicesMetadata = "erase_devices_metadata"
	CmdEraseDevices         = "erase_devices"
	CmdGetInventory         = "get_inventory"
	CmdFinalizeRescue       = "finalize_rescue"
	CmdPowerOff             = "power_off"
)

// CommandRequest is the body of POST /v1/commands.
type CommandRequest struct {
	Name   string         `json:"name"`
	Params map[string]any `json:"params"`
}

// CommandResult is an accepted command and, later, its outcome.
type CommandResult struct {
	ID      string         `json:"id"`
	Name    string         `json:"command_name"`
	Status  string         `json:"command_status"`
	Error   string         `json:"command_error,omitempty"`
	Result  map[string]any `json:"command_result,omitempty"`
	Written int64          `json:"bytes_written,omitempty"` // progress of write_image
}

// WriteImage parameters.
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

// LookupResponse is GET /v1/lookup's answer (the fields the agent reads).
type LookupResponse struct {
	Node struct {
		UUID string `json:"uuid"`
	} `json:"node"`
	Config struct {
		HeartbeatTimeout   float64 `json:"heartbeat_timeout"`
		AgentToken         string  `json:"agent_token"`
		AgentTokenRequired bool    `json:"agent_token_required"`
	} `json:"config"`
}
