package server

import (
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/console"
	"github.com/anvil-metal/anvil/internal/driver/direct"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
)

// The BMC calls kept for diagnoses: the last bmcCallsKept outcomes (a
// repeated one, as power sync's reads, in one slot) of each of at most
// bmcCallNodes nodes: some 300 bytes each, under 50 MB at worst.
const (
	bmcCallsKept = 8
	bmcCallNodes = 20000
)

// diagnosisSources wires what this process saw of a node into its
// conductor's failure diagnoses: the console recording (once the console
// service runs: consoles returns nil before, and in an API-only process),
// the network boot services' record (when they run here), the BMC calls
// and the agent logs saved in --deploy-logs-local-path.
func diagnosisSources(cfg Config, calls *recent.Log[model.BMCCall], consoles func() *console.Service) conductor.DiagnosisSources {
	src := conductor.DiagnosisSources{
		ConsoleTail: func(node string, n int) ([]byte, bool) {
			if c := consoles(); c != nil {
				return c.Log(node, n)
			}
			return nil, false
		},
		BMCCalls: calls.Get,
		AgentLogs: func(node string, since time.Time) *model.AgentLogs {
			return direct.FindLogs(cfg.DeployLogsPath, cfg.DeployLogsCollect, node, since)
		},
	}
	if pub, ok := cfg.Boot.(bootPublisher); ok {
		src.Boot = pub.s.Seen
	}
	return src
}
