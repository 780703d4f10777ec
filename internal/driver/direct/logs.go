package direct

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

// saveLogs asks the node's agent for its system logs
// (log.collect_system_logs: base64 of a gzipped tarball) and writes them to
// LogsDir as <node>_<operation>_<time>.tar.gz, readable by the conductor's
// user only. It returns what happened, for the operation's error message.
func (d *Direct) saveLogs(ctx context.Context, n *model.Node, op string) string {
	url, _ := n.DriverInternalInfo[ipa.KeyURL].(string)
	token, _ := n.DriverInternalInfo[ipa.KeyToken].(string)
	ca, _ := n.DriverInternalInfo[ipa.KeyVerifyCA].(string)
	c, err := d.cfg.Client.verifying(ca)
	if err != nil {
		return fmt.Sprintf("collecting the agent's logs failed: %v", err)
	}
	res, err := c.Run(ctx, url, token, ipa.CmdCollectSystemLogs, nil, true)
	if err == nil && res.Status != ipa.StatusSucceeded {
		err = fmt.Errorf("%s: %s", res.Status, res.ErrorText())
	}
	if err != nil {
		return fmt.Sprintf("collecting the agent's logs failed: %v", err)
	}
	enc, _ := res.Result["system_logs"].(string)
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "the agent returned no usable logs"
	}
	if err := os.MkdirAll(d.cfg.LogsDir, 0o700); err != nil {
		return fmt.Sprintf("saving the agent's logs failed: %v", err)
	}
	p := filepath.Join(d.cfg.LogsDir, fmt.Sprintf("%s_%s_%s.tar.gz", n.UUID, op, time.Now().UTC().Format("2006-01-02-15-04-05")))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return fmt.Sprintf("saving the agent's logs failed: %v", err)
	}
	return "the agent's logs are in " + p
}
