package ipa

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// Command statuses (extensions/base.py AgentCommandStatus).
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	// StatusVersionMismatch is what IPA reports when the clean_version or
	// deploy_version Ironic sends differs from its hardware managers'.
	StatusVersionMismatch = "CLEAN_VERSION_MISMATCH"
)

// Commands, as Ironic names them in agent_client.py.
const (
	CmdPrepareImage      = "standby.prepare_image"
	CmdGetPartitionUUIDs = "standby.get_partition_uuids"
	CmdSync              = "standby.sync"
	CmdPowerOff          = "standby.power_off"
	CmdInstallBootloader = "image.install_bootloader"
	CmdGetCleanSteps     = "clean.get_clean_steps"
	CmdExecuteCleanStep  = "clean.execute_clean_step"
	CmdGetDeploySteps    = "deploy.get_deploy_steps"
	CmdExecuteDeployStep = "deploy.execute_deploy_step"
	CmdFinalizeRescue    = "rescue.finalize_rescue"
	CmdCollectSystemLogs = "log.collect_system_logs"
)

// The command API's path and query parameters.
const (
	CommandsPath = "/v1/commands/"
	QueryToken   = "agent_token" // the token (the only place IPA reads it)
	QueryWait    = "wait"        // "true": answer once the command is done
)

// CommandRequest is the body of POST /v1/commands/.
type CommandRequest struct {
	Name   string         `json:"name"`
	Params map[string]any `json:"params"`
}

// CommandResult is a command as the agent reports it (BaseCommandResult's
// serializable fields). Result is command specific: {"clean_result",
// "clean_step"} for clean.execute_clean_step, {"deploy_result",
// "deploy_step"} for deploy.execute_deploy_step, {"result": "..."} for a
// command returning a string, null for standby.sync.
type CommandResult struct {
	ID     string         `json:"id"`
	Name   string         `json:"command_name"`
	Status string         `json:"command_status"`
	Error  *RESTError     `json:"command_error"`
	Result map[string]any `json:"command_result"`
	// BytesWritten is Anvil's addition: an image writer's progress (IPA
	// reports none; Ironic and IPA ignore the field).
	BytesWritten int64 `json:"bytes_written,omitempty"`
}

// Done reports whether the command finished (successfully or not).
func (r CommandResult) Done() bool { return r.Status != StatusRunning }

// ErrorText is the failure's text as Ironic shows it (get_command_error:
// details, else message).
func (r CommandResult) ErrorText() string {
	if r.Error == nil {
		return ""
	}
	if r.Error.Details != "" {
		return r.Error.Details
	}
	return r.Error.Message
}

// CommandList is GET /v1/commands/'s answer.
type CommandList struct {
	Commands []CommandResult `json:"commands"`
}

// RESTError is IPA's serialised error (errors.py RESTError): a failed
// command's command_error.
type RESTError struct {
	Type    string `json:"type"`
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details string `json:"details"`
}

// CommandFailed is IPA's CommandExecutionError for a command that failed.
func CommandFailed(details string) *RESTError {
	return &RESTError{Type: "CommandExecutionError", Code: 500, Message: "Command execution failed", Details: details}
}

// Fault is the body of every HTTP error of the command API (app.py
// format_exception, WSME's shape).
type Fault struct {
	Code   string `json:"faultcode"`
	String string `json:"faultstring"`
}

// NewFault is the fault for an HTTP status (faultcode Client below 500).
func NewFault(status int, s string) Fault {
	code := "Client"
	if status >= 500 {
		code = "Server"
	}
	return Fault{Code: code, String: s}
}

// The command API's error texts, as IPA words them.
const (
	FaultTokenInvalid   = "401 Unauthorized: Token invalid."
	FaultBadRequestBody = "400 Bad Request: Missing or invalid name or params"
	FaultBadCommandName = "Invalid command: Command name must be of the form <extension>.<name>"
)

// FaultUnknownCommand is IPA's answer to a command its extension lacks.
func FaultUnknownCommand(cmd string) string {
	return "Invalid command: Unknown command: " + cmd
}

// FaultUnknownExtension is IPA's answer to an unknown extension (404).
func FaultUnknownExtension(ext string) string {
	return fmt.Sprintf("Not found: Extension with id %s not found.", ext)
}

// FaultNoSuchCommand is IPA's answer to GET /v1/commands/{id} (404).
func FaultNoSuchCommand(id string) string {
	return fmt.Sprintf("Not found: Command Result with id %s not found.", id)
}

// FaultBusy is IPA's AgentIsBusy (409).
func FaultBusy(running string) string {
	return "Agent is busy: executing command " + running
}

// LookupResponse is GET /v1/lookup's answer, as the API encodes it (in
// the order of its fields) and the agent decodes it.
type LookupResponse struct {
	Node   LookupNode   `json:"node"`
	Config LookupConfig `json:"config"`
}

// LookupNode holds the node fields a lookup returns (Ironic's
// _LOOKUP_RETURN_FIELDS, secrets masked) plus Anvil's provision_state, by
// which an Anvil agent learns it was booted to inspect (IPA learns it from
// ipa-inspection-callback-url and ignores the field).
type LookupNode struct {
	UUID               string         `json:"uuid"`
	ProvisionState     string         `json:"provision_state,omitempty"`
	Properties         map[string]any `json:"properties"`
	InstanceInfo       map[string]any `json:"instance_info"`
	DriverInternalInfo map[string]any `json:"driver_internal_info"`
	// Links are the node's self and bookmark links (Ironic's).
	Links []Link `json:"links,omitempty"`
}

// Link is a link of an Ironic resource.
type Link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
}

// LookupConfig is the agent configuration a lookup hands out.
type LookupConfig struct {
	HeartbeatTimeout       float64 `json:"heartbeat_timeout"`
	AgentToken             string  `json:"agent_token"`
	AgentTokenRequired     bool    `json:"agent_token_required"`
	AgentMD5ChecksumEnable bool    `json:"agent_md5_checksum_enable"`
	// Metrics and MetricsStatsd configure the agent's metrics (Ironic's
	// [metrics]agent_* options); Anvil's agent sends none.
	Metrics       map[string]any `json:"metrics,omitempty"`
	MetricsStatsd map[string]any `json:"metrics_statsd,omitempty"`
}

// MaskedToken is what a lookup answers once the token was handed out.
const MaskedToken = "******"

// Heartbeat is the body of POST /v1/heartbeat/{node} (API 1.68 fields).
type Heartbeat struct {
	CallbackURL        string `json:"callback_url"`
	AgentVersion       string `json:"agent_version,omitempty"`
	AgentToken         string `json:"agent_token,omitempty"`
	AgentVerifyCA      string `json:"agent_verify_ca,omitempty"`
	AgentStatus        string `json:"agent_status,omitempty"`
	AgentStatusMessage string `json:"agent_status_message,omitempty"`
}

// InspectionData is the body of POST /v1/continue_inspection: the
// inventory, the token (Anvil's requirement once the node's token is
// required; IPA, posting before its lookup, has none) and any other keys,
// which become the node's plugin_data.
type InspectionData struct {
	Inventory  map[string]any `json:"inventory"`
	AgentToken string         `json:"agent_token,omitempty"`
}

// driver_internal_info keys the conductor keeps for an agent (Ironic's).
const (
	KeyToken         = "agent_secret_token"   // the issued token (masked by the API)
	KeyTokenRequired = "agent_token_required" // a heartbeat must carry a token
	KeyURL           = "agent_url"            // the agent's callback_url
	KeyVerifyCA      = "agent_verify_ca"      // PEM of the certificate an https callback_url is verified with
	KeyVersion       = "agent_version"
	// KeyCachedDeploySteps: the agent's deploy steps once fetched, by
	// interface (Ironic's agent_cached_deploy_steps).
	KeyCachedDeploySteps = "agent_cached_deploy_steps"
)

// ForgetOnPowerOff removes from a node's driver_internal_info what does not
// survive the machine's power off or reboot (Ironic's
// wipe_internal_info_on_power_off): the agent's URL (DHCP may give it
// another), its token (the agent that boots next looks up and is issued a
// new one — the way out for an agent that never received its lookup
// answer), its certificate and the steps it reported.
func ForgetOnPowerOff(info map[string]any) {
	for _, k := range []string{KeyURL, KeyToken, KeyVerifyCA, KeyCachedDeploySteps} {
		delete(info, k)
	}
}

// NewToken returns a fresh random token (256 bits, URL-safe), the value
// lookup hands out once.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics on a broken source)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TokenMatches compares a presented token with the issued one in constant
// time; an empty one never matches.
func TokenMatches(issued, got string) bool {
	if issued == "" || got == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(issued), []byte(got)) == 1
}

// RedactURL returns u without its query string and credentials, for logs
// and error texts (the command API's query carries the token).
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			return u[:i]
		}
		return u
	}
	p.RawQuery, p.Fragment, p.User = "", "", nil
	return p.String()
}
