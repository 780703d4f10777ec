package api

import (
	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/ipa"
)

// minorHeartbeat is when Ironic added the ramdisk lookup/heartbeat endpoints.
const minorHeartbeat = 22

func (hs agentAPI) agentRoutes() {
	s := hs.s
	s.handle(endpoint{"POST": {hs.heartbeat, public()}}, "/v1/heartbeat/{ident}")
}

// POST /v1/heartbeat/{ident}: an agent's callback (public in Ironic). It
// resumes a node parked in a wait state; 202 with no body.
func (hs agentAPI) heartbeat(rc *call) error {
	s := hs.s
	if rc.minor < minorHeartbeat {
		return errNotFound()
	}
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "callback_url", "agent_version", "agent_token",
		"agent_verify_ca", "agent_status", "agent_status_message")
	if err != nil {
		return err
	}
	var hb ipa.Heartbeat
	for name, dst := range map[string]*string{"callback_url": &hb.CallbackURL, "agent_version": &hb.AgentVersion,
		"agent_token": &hb.AgentToken, "agent_status": &hb.AgentStatus, "agent_verify_ca": &hb.AgentVerifyCA,
		"agent_status_message": &hb.AgentStatusMessage} {
		v, _, err := argString(name, args[name])
		if err != nil {
			return err
		}
		*dst = v
	}
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Agents.Heartbeat(rc.ctx, ident, hb); err != nil {
		// Whichever conductor answered (this process's, or the owner a
		// handoff asked), an unknown node is answered as a bad token: the
		// endpoint is public and must not be an oracle of which nodes
		// exist (conductor.Heartbeat explains the choice).
		if f, ok := fault.As(err); ok && f.Kind == fault.NotFound {
			return conductor.ErrBadAgentToken()
		}
		return err
	}
	return rc.accepted("")
}
