package agent

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// runFunc runs one command; progress counts bytes written.
type runFunc func(ctx context.Context, params map[string]any, progress *atomic.Int64) (map[string]any, error)

// commandSpec is one command of an extension: synchronous ones answer
// their result in the POST's response, asynchronous ones RUNNING at once.
type commandSpec struct {
	async    bool
	validate func(params map[string]any) error // checked before the command is accepted
	run      runFunc
}

// extensions is the agent's command table, by IPA's extension and command
// names.
func (a *Agent) extensions() map[string]map[string]commandSpec {
	return map[string]map[string]commandSpec{
		"standby": {
			"prepare_image":       {async: true, validate: validateImageInfo, run: a.prepareImage},
			"get_partition_uuids": {run: a.getPartitionUUIDs},
			"sync":                {run: a.sync},
			"power_off":           {async: true, run: a.powerOff},
		},
		"image": {"install_bootloader": {async: true, run: a.installBootloader}},
		"clean": {
			"get_clean_steps":    {run: stepsLister("clean", ipa.CleanSteps)},
			"execute_clean_step": {async: true, run: a.executeStep("clean", ipa.CleanSteps)},
		},
		"deploy": {
			"get_deploy_steps":    {run: stepsLister("deploy", ipa.DeploySteps)},
			"execute_deploy_step": {async: true, run: a.executeStep("deploy", ipa.DeploySteps)},
		},
		"rescue": {"finalize_rescue": {run: a.finalizeRescue}},
		"log":    {"collect_system_logs": {run: a.collectSystemLogs}},
	}
}

// lookupCommand finds a command; a miss is IPA's status and fault text.
func (a *Agent) lookupCommand(ext, name string) (commandSpec, int, string) {
	cmds, ok := a.extensions()[ext]
	if !ok {
		return commandSpec{}, http.StatusNotFound, ipa.FaultUnknownExtension(ext)
	}
	spec, ok := cmds[name]
	if !ok {
		return commandSpec{}, http.StatusBadRequest, ipa.FaultUnknownCommand(name)
	}
	return spec, 0, ""
}

// validateImageInfo is IPA's _validate_image_info: id and a non-empty urls
// list, and a checksum or the os_hash_algo/os_hash_value pair.
func validateImageInfo(p map[string]any) error {
	info, _ := p["image_info"].(map[string]any)
	if info == nil {
		return errors.New("Image is missing 'id' field.")
	}
	for _, f := range []string{"id", "urls"} {
		if _, ok := info[f]; !ok {
			return fmt.Errorf("Image is missing '%s' field.", f)
		}
	}
	if urls, _ := info["urls"].([]any); len(urls) == 0 {
		return errors.New("Image 'urls' must be a list with at least one element.")
	}
	_, hasSum := info["checksum"].(string)
	algo, _ := info["os_hash_algo"].(string)
	val, _ := info["os_hash_value"].(string)
	if !hasSum && (algo == "" || val == "") {
		return errors.New("Image checksum is not available, either the 'checksum' field or the 'os_hash_algo' and 'os_hash_value' fields pair must be set for image verification.")
	}
	return nil
}

// prepareImage is standby.prepare_image: the image of image_info (its first
// URL) written to the disk and verified against the checksum image_info
// gives (the conductor decided which; ipa.ImageInfoChecksum reads it).
func (a *Agent) prepareImage(ctx context.Context, p map[string]any, progress *atomic.Int64) (map[string]any, error) {
	info, _ := p["image_info"].(map[string]any)
	return a.writeImageInfo(ctx, info, p["configdrive"], progress)
}

// writeImageInfo hands image_info to the image writer: its first URL, the
// checksum image_info names, and image_info and configdrive themselves (a
// configdrive inside image_info too, as older Ironic sends it).
func (a *Agent) writeImageInfo(ctx context.Context, info map[string]any, configdrive any, progress *atomic.Int64) (map[string]any, error) {
	if info == nil {
		return nil, errors.New("prepare_image: image_info is missing")
	}
	urls, _ := info["urls"].([]any)
	src, _ := firstOf(urls).(string)
	sum, err := ipa.ImageInfoChecksum(info, a.allowMD5())
	if err != nil {
		return nil, fmt.Errorf("prepare_image: %w", err)
	}
	if configdrive == nil {
		configdrive = info["configdrive"]
	}
	res, err := a.writeImage(ctx, map[string]any{ipa.ParamImageSource: src,
		ipa.ParamChecksum: sum.Value, ipa.ParamChecksumAlgo: sum.Algo,
		ipa.ParamImageInfo: info, ipa.ParamConfigDrive: configdrive}, progress)
	if err != nil {
		return nil, err
	}
	id, _ := info["id"].(string)
	a.mu.Lock()
	a.imageDisk, _ = res["root_device"].(string)
	root, _ := a.partitionUUIDs["root uuid"].(string)
	a.mu.Unlock()
	if root == "" {
		root = "None"
	}
	out := map[string]any{"result": fmt.Sprintf("prepare_image: image (%s) written to device %s root_uuid=%s", id, a.cfg.Disk, root)}
	for k, v := range res {
		out[k] = v
	}
	return out, nil
}

func firstOf(l []any) any {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}

// getPartitionUUIDs is standby.get_partition_uuids: {} for a whole-disk
// image (IPA's answer), the partitions' UUIDs once a partition image is
// written.
func (a *Agent) getPartitionUUIDs(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]any{}
	for k, v := range a.partitionUUIDs {
		out[k] = v
	}
	return out, nil
}

// sync is standby.sync: file system buffers flushed; no result (null).
func (a *Agent) sync(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
	syscall.Sync()
	return nil, nil
}

// powerOff is standby.power_off. The disk is flushed; the machine itself is
// powered off only when the agent runs as a ramdisk's init (Config.PowerOff),
// never in a test or on a host.
func (a *Agent) powerOff(ctx context.Context, _ map[string]any, _ *atomic.Int64) (map[string]any, error) {
	syscall.Sync()
	if a.cfg.PowerOff == nil {
		return map[string]any{"result": "power_off: disk flushed; this agent does not power the machine off"}, nil
	}
	if err := a.cfg.PowerOff(ctx); err != nil {
		return nil, fmt.Errorf("power_off: %w", err)
	}
	return map[string]any{"result": "power_off: None"}, nil
}

// stepsLister answers clean.get_clean_steps / deploy.get_deploy_steps.
func stepsLister(kind string, steps func() []ipa.Step) runFunc {
	return func(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
		return ipa.StepsResult(kind, steps()), nil
	}
}

// versionMismatch is IPA's VersionMismatch: the conductor planned with
// other hardware manager versions than this agent's.
type versionMismatch struct{ got any }

func (e *versionMismatch) Error() string {
	return fmt.Sprintf("Hardware managers version mismatch, reload agent with correct version. Agent version: %v, node version: %v",
		map[string]any{ipa.HardwareManager: ipa.HardwareManagerVersion}, e.got)
}

// executeStep is clean.execute_clean_step / deploy.execute_deploy_step:
// params step (with optional args), node, ports and <kind>_version; the
// result is {"<kind>_result": ..., "<kind>_step": step}.
func (a *Agent) executeStep(kind string, offered func() []ipa.Step) runFunc {
	return func(ctx context.Context, p map[string]any, progress *atomic.Int64) (map[string]any, error) {
		if v, ok := p[kind+"_version"]; ok && v != nil {
			want := map[string]any{ipa.HardwareManager: ipa.HardwareManagerVersion}
			if !reflect.DeepEqual(v, want) {
				return nil, &versionMismatch{got: v}
			}
		}
		step, _ := p["step"].(map[string]any)
		name, _ := step["step"].(string)
		if name == "" {
			return nil, fmt.Errorf("Malformed %s_step, no \"step\" key: %v", kind, step)
		}
		known := false
		for _, s := range offered() {
			known = known || s.Step == name
		}
		if !known {
			return nil, fmt.Errorf("no hardware manager offers %s step %q", kind, name)
		}
		args, _ := step["args"].(map[string]any)
		var res map[string]any
		var err error
		switch name {
		case ipa.StepEraseDevicesMetadata:
			res, err = a.eraseMetadata(ctx, args, progress)
		case ipa.StepEraseDevices:
			res, err = a.eraseDevices(ctx, args, progress)
		case ipa.StepWriteImage:
			info, _ := args["image_info"].(map[string]any)
			if err = validateImageInfo(args); err == nil {
				res, err = a.writeImageInfo(ctx, info, args["configdrive"], progress)
			}
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{kind + "_result": res, kind + "_step": step}, nil
	}
}

// finalizeRescue is rescue.finalize_rescue: it stores the rescue password's
// hash (a real ramdisk would put it in /etc/shadow for the rescue user).
// Only a SHA-crypt hash is accepted (Anvil sends SHA-512, Ironic 21.4
// SHA-256 by default); the value is never logged nor returned.
func (a *Agent) finalizeRescue(_ context.Context, params map[string]any, _ *atomic.Int64) (map[string]any, error) {
	hash, _ := params[ipa.ParamRescuePassword].(string)
	if hashed, _ := params[ipa.ParamHashed].(bool); !hashed || !ipa.IsShadowHash(hash) {
		return nil, errors.New("finalize_rescue: rescue_password must be a SHA-256 or SHA-512 crypt hash (hashed=true)")
	}
	root := a.cfg.RootDir
	if root == "" {
		root = "/"
	}
	p := filepath.Join(root, ipa.RescuePasswordFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("finalize_rescue: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(hash+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("finalize_rescue: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return nil, fmt.Errorf("finalize_rescue: %w", err)
	}
	return nil, nil
}

// collectSystemLogs is log.collect_system_logs: {"system_logs": base64 of a
// gzipped tarball}, here of the agent's command history and inventory.
func (a *Agent) collectSystemLogs(context.Context, map[string]any, *atomic.Int64) (map[string]any, error) {
	a.cmd.mu.Lock()
	hist := make([]ipa.CommandResult, 0, len(a.cmd.order))
	for _, c := range a.cmd.order {
		r := c.res
		r.Result = nil // results may be large (logs themselves); names and statuses suffice
		hist = append(hist, r)
	}
	a.cmd.mu.Unlock()
	files := map[string]any{"commands.json": hist}
	if inv, err := ReadInventory(a.cfg.RootDir, a.cfg.Disk); err == nil {
		files["inventory.json"] = inv
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"commands.json", "inventory.json"} {
		v, ok := files[name]
		if !ok {
			continue
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return map[string]any{"system_logs": base64.StdEncoding.EncodeToString(buf.Bytes())}, nil
}
