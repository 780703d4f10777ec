package disk

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// ConfigDriveLabel is the volume label cloud-init looks for.
const ConfigDriveLabel = "config-2"

// MaxConfigDriveSize is IPA's limit and the size of the partition made for
// a config drive on a whole-disk image (MAX_CONFIG_DRIVE_SIZE_MB).
const MaxConfigDriveSize = 64 << 20

// configDriveVersions are the metadata versions written, as openstacksdk's
// configdrive.populate_directory does.
var configDriveVersions = []string{"2012-08-10", "latest"}

// ConfigDrive is the JSON object form of instance_info.configdrive.
type ConfigDrive struct {
	MetaData    map[string]any `json:"meta_data"`
	UserData    any            `json:"user_data"` // a string, or JSON written as such
	NetworkData map[string]any `json:"network_data"`
	VendorData  map[string]any `json:"vendor_data"`
}

// BuildConfigDrive makes the config-2 ISO 9660 image (Rock Ridge and
// Joliet, as genisoimage -J -r -V config-2 does) of cd: for each version,
// openstack/<version>/meta_data.json, user_data, network_data.json and
// vendor_data2.json. workdir holds the temporary files ("" for the system
// temporary directory).
func BuildConfigDrive(cd ConfigDrive, workdir string) ([]byte, error) {
	files := map[string][]byte{}
	meta, err := json.Marshal(orEmpty(cd.MetaData))
	if err != nil {
		return nil, fmt.Errorf("configdrive meta_data: %w", err)
	}
	var user []byte
	switch u := cd.UserData.(type) {
	case nil:
	case string:
		user = []byte(u)
	default:
		if user, err = json.Marshal(u); err != nil {
			return nil, fmt.Errorf("configdrive user_data: %w", err)
		}
	}
	for _, v := range configDriveVersions {
		dir := "openstack/" + v + "/"
		files[dir+"meta_data.json"] = meta
		if len(cd.NetworkData) > 0 {
			b, _ := json.Marshal(cd.NetworkData)
			files[dir+"network_data.json"] = b
		}
		if len(cd.VendorData) > 0 {
			b, _ := json.Marshal(cd.VendorData)
			files[dir+"vendor_data2.json"] = b
		}
		if len(user) > 0 {
			files[dir+"user_data"] = user
		}
	}
	return buildISO(files, workdir)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// buildISO writes files (slash paths) into a config-2 ISO image.
func buildISO(files map[string][]byte, workdir string) ([]byte, error) {
	ws, err := os.MkdirTemp(workdir, "configdrive-ws-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	out, err := os.CreateTemp(workdir, "configdrive-*.iso")
	if err != nil {
		return nil, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	fs, err := iso9660.Create(file.New(out, false), 0, 0, 2048, ws)
	if err != nil {
		return nil, fmt.Errorf("configdrive: %w", err)
	}
	for p, data := range files {
		if err := fs.Mkdir("/" + path.Dir(p)); err != nil {
			return nil, fmt.Errorf("configdrive: mkdir %s: %w", path.Dir(p), err)
		}
		f, err := fs.OpenFile("/"+p, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return nil, fmt.Errorf("configdrive: create %s: %w", p, err)
		}
		if _, err := f.Write(data); err != nil {
			return nil, fmt.Errorf("configdrive: write %s: %w", p, err)
		}
		f.Close()
	}
	if err := fs.Finalize(iso9660.FinalizeOptions{RockRidge: true, Joliet: true, VolumeIdentifier: ConfigDriveLabel}); err != nil {
		return nil, fmt.Errorf("configdrive: %w", err)
	}
	iso, err := os.ReadFile(out.Name())
	if err != nil {
		return nil, err
	}
	padVolumeIDs(iso)
	return iso, nil
}

// padVolumeIDs pads the volume identifier of each volume descriptor with
// spaces, as ISO 9660 requires and genisoimage writes (go-diskfs pads with
// NULs): UCS-2 spaces in a Joliet descriptor.
func padVolumeIDs(iso []byte) {
	const sector, first = 2048, 16
	for off := first * sector; off+sector <= len(iso); off += sector {
		vd := iso[off : off+sector]
		if vd[0] == 255 || string(vd[1:6]) != "CD001" {
			return
		}
		id := vd[40:72]
		switch vd[0] {
		case 1:
			for i := len(bytes.TrimRight(id, "\x00 ")); i < len(id); i++ {
				id[i] = ' '
			}
		case 2:
			n := len(bytes.TrimRight(id, "\x00"))
			n += n % 2
			for i := n; i+1 < len(id); i += 2 {
				id[i], id[i+1] = 0, ' '
			}
		}
	}
}

// EncodeConfigDrive is the gzip+base64 string form Ironic stores and sends
// to the agent.
func EncodeConfigDrive(image []byte) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(image)
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// FetchConfigDrive turns the agent's configdrive parameter into the image
// to write, as IPA's get_configdrive does: an http(s) URL is downloaded,
// then the content is base64-decoded and gunzipped. An image over
// MaxConfigDriveSize is refused.
func FetchConfigDrive(ctx context.Context, client *http.Client, s string) ([]byte, error) {
	data := []byte(s)
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s, nil)
		if err != nil {
			return nil, fmt.Errorf("configdrive: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("Can't download the configdrive content from '%s'. Reason: %w", s, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 400 {
			return nil, fmt.Errorf("Can't download the configdrive content from '%s'. Got status code %d", s, resp.StatusCode)
		}
		if data, err = io.ReadAll(io.LimitReader(resp.Body, 2*MaxConfigDriveSize)); err != nil {
			return nil, fmt.Errorf("configdrive: %w", err)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("Config drive is not base64 encoded or the content is malformed: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("Encountered error while decompressing the config drive: %w", err)
	}
	image, err := io.ReadAll(io.LimitReader(zr, MaxConfigDriveSize+1))
	if err != nil {
		return nil, fmt.Errorf("Encountered error while decompressing the config drive: %w", err)
	}
	if len(image) > MaxConfigDriveSize {
		return nil, errors.New("Config drive size exceeds maximum limit of 64MiB")
	}
	return image, nil
}
