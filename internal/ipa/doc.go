// Package ipa is the wire contract of the Ironic Python Agent (IPA), used
// by both sides of Anvil: the conductor (internal/driver/direct, the lookup,
// heartbeat and continue_inspection endpoints of internal/api) drives an
// agent with it, and `anvil agent` (internal/agent) serves it, so that a
// stock IPA ramdisk can be driven by Anvil and real Ironic can drive
// `anvil agent`.
//
// The shapes are IPA's and Ironic's (ironic_python_agent/api/app.py,
// extensions/base.py, errors.py, extensions/{standby,clean,deploy,rescue,
// log,image}.py; ironic/drivers/modules/agent_client.py, agent_base.py,
// agent.py; ironic/api/controllers/v1/ramdisk.py):
//
//   - lookup: GET /v1/lookup → LookupResponse {node, config}; the plain
//     agent_token is handed out once, later lookups answer MaskedToken;
//   - heartbeat: POST /v1/heartbeat/{node} with Heartbeat;
//   - commands: POST /v1/commands/?wait=false&agent_token=T with
//     CommandRequest {name: "extension.command", params}; GET
//     /v1/commands/ → {"commands": [CommandResult...]} (oldest first, the
//     last command last: Ironic reads commands[-1]); GET /v1/commands/{id};
//   - failures: HTTP errors are Fault {faultcode, faultstring}; a failed
//     command carries a RESTError {type, code, message, details} in
//     command_error.
//
// The token travels as IPA reads it: the agent_token query parameter of
// the command API (the only place IPA looks; Ironic 21.4 sends it there),
// in the heartbeat body, and in continue_inspection's body. Neither side of
// Anvil logs a URL's query string or a body holding the token
// (RedactURL).
//
// The clean and deploy steps the agent offers are defined once here
// (CleanSteps, DeploySteps); the image checksum policy — which algorithm a
// checksum uses and whether it is allowed — is decided once, by the
// conductor (ImageChecksum), and the agent verifies what image_info tells it
// (Checksum.NewHash).
package ipa
