package direct

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// The modes of Ironic's [agent]deploy_logs_collect.
const (
	CollectOnFailure = "on_failure"
	CollectAlways    = "always"
	CollectNever     = "never"
)

// CheckCollect refuses a deploy_logs_collect mode Ironic does not know.
func CheckCollect(mode string) error {
	switch mode {
	case "", CollectOnFailure, CollectAlways, CollectNever:
		return nil
	}
	return fmt.Errorf("deploy_logs_collect must be always, on_failure or never, not %q", mode)
}

// collects reports whether the agent's logs are saved after an operation
// that failed (or succeeded).
func (c Config) collects(failed bool) bool {
	if c.LogsDir == "" {
		return false
	}
	switch c.LogsCollect {
	case CollectNever:
		return false
	case CollectAlways:
		return true
	}
	return failed
}

// maxLogMembers bounds the file names FindLogs lists of a tarball.
const maxLogMembers = 100

// FindLogs describes the newest agent logs saved for node in dir at or
// after since (saveLogs' <node>_<operation>_<time>.tar.gz), with the
// files the tarball holds; without any, it says why.
func FindLogs(dir, mode, node string, since time.Time) *model.AgentLogs {
	out := &model.AgentLogs{Collect: cmp.Or(mode, CollectOnFailure)}
	switch {
	case dir == "":
		out.Note = "the agent's logs are not collected: no deploy_logs_local_path is set"
		return out
	case mode == CollectNever:
		out.Note = "the agent's logs are not collected: deploy_logs_collect is never"
		return out
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		out.Note = fmt.Sprintf("reading %s failed: %v", dir, err)
		return out
	}
	var best os.FileInfo
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), node+"_") || !strings.HasSuffix(e.Name(), ".tar.gz") {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().Before(since) || (best != nil && !fi.ModTime().After(best.ModTime())) {
			continue
		}
		best = fi
	}
	if best == nil {
		out.Note = "no agent logs were saved for this operation (no agent command failed, or the agent did not answer log.collect_system_logs)"
		return out
	}
	out.Path, out.Bytes, out.Saved = filepath.Join(dir, best.Name()), best.Size(), best.ModTime().UTC()
	out.Files, err = tarMembers(out.Path)
	if err != nil {
		out.Note = fmt.Sprintf("listing %s failed: %v", out.Path, err)
	}
	return out
}

// tarMembers lists the names in a gzipped tarball, at most maxLogMembers.
func tarMembers(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var names []string
	for len(names) < maxLogMembers {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return names, err
		}
		names = append(names, h.Name)
	}
	return names, nil
}
