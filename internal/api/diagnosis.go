package api

import (
	"errors"
	"net/http"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/store"
)

// GET /v1/nodes/{ident}/diagnosis (an Anvil extension, any microversion)
// answers the node's latest failure diagnosis (model.Diagnosis: the class,
// its evidence and what to do, the console tail, boot events, BMC calls,
// the agent's logs), as the conductor stored it: bounded and with its
// secrets masked. A node that has not failed has none (404). It holds the
// console's output, so it is guarded as the console log is.
func (hs nodeAPI) diagnosisRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.getDiagnosis, nodeRule("baremetal:node:get_console")}}, "/v1/nodes/{ident}/diagnosis")
}

func (hs nodeAPI) getDiagnosis(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	n, _, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	b, err := s.cfg.Details.Diagnoses().GetDiagnosis(rc.ctx, n.UUID)
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "Node %s has no diagnosis: it has not failed since Anvil began diagnosing failures.", n.UUID)
	}
	if err != nil {
		return err
	}
	rc.w.Header().Set("Content-Type", "application/json")
	rc.w.WriteHeader(http.StatusOK)
	_, _ = rc.w.Write(b)
	return nil
}
