package bmcemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"time"
)

// The one virtual media device of every machine: a CD/DVD drive, as
// sushy-tools names it.
const vmediaCd = "Cd"

const rfManagers = rfRoot + "/Managers"

// maxMediaBytes bounds a virtual media download (a DVD holds 8.5 GB).
const maxMediaBytes = 10 << 30

// media is a machine's virtual CD drive, under Machine.mu.
type media struct {
	image          string // URL the BMC was given
	name           string // last path element of the URL
	inserted       bool
	writeProtected bool
	file           string // the downloaded copy in the state directory
}

// Media is a snapshot of a machine's virtual CD drive.
type Media struct {
	Image          string `json:"image,omitempty"`
	Inserted       bool   `json:"inserted"`
	WriteProtected bool   `json:"write_protected"`
	File           string `json:"file,omitempty"` // the downloaded image
}

// Media returns the state of the machine's virtual CD drive.
func (m *Machine) Media() Media {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Media{Image: m.media.image, Inserted: m.media.inserted, WriteProtected: m.media.writeProtected, File: m.media.file}
}

// mediaDir is where a machine's downloaded images live.
func (e *Emulator) mediaDir(m *Machine) string { return filepath.Join(e.stateDir, m.ID, "media") }

// InsertMedia downloads the image at rawURL into the machine's state
// directory and inserts it (as the InsertMedia action does). On failure the
// drive is left empty.
func (e *Emulator) InsertMedia(ctx context.Context, m *Machine, rawURL string, writeProtected bool) error {
	m.mediaMu.Lock()
	defer m.mediaMu.Unlock()
	e.ejectLocked(m)
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &mediaError{status: http.StatusBadRequest, msg: fmt.Sprintf("The value '%s' for the property Image is not a valid http(s) URL.", rawURL)}
	}
	dir := e.mediaDir(m)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("virtual media of %s: %w", m.ID, err)
	}
	file := filepath.Join(dir, "cd.iso")
	if err := e.download(ctx, rawURL, file); err != nil {
		return &mediaError{status: http.StatusInternalServerError,
			msg: fmt.Sprintf("Failed fetching image from URL %s: %v", rawURL, err)}
	}
	name := path.Base(u.Path)
	if name == "." || name == "/" {
		name = ""
	}
	m.mu.Lock()
	m.media = media{image: rawURL, name: name, inserted: true, writeProtected: writeProtected, file: file}
	m.mu.Unlock()
	e.log.Info("virtual media inserted", "machine", m.ID, "image", rawURL)
	(vmFleet{e}).vmMediaChanged(m)
	return nil
}

// EjectMedia empties the machine's virtual CD drive.
func (e *Emulator) EjectMedia(m *Machine) {
	m.mediaMu.Lock()
	defer m.mediaMu.Unlock()
	e.ejectLocked(m)
}

func (e *Emulator) ejectLocked(m *Machine) {
	m.mu.Lock()
	old := m.media
	m.media = media{}
	m.mu.Unlock()
	if old.file != "" {
		(vmFleet{e}).vmMediaChanged(m)
		_ = os.Remove(old.file)
		e.log.Info("virtual media ejected", "machine", m.ID, "image", old.image)
	}
}

// mediaError is an InsertMedia failure with the HTTP status to answer.
type mediaError struct {
	status int
	msg    string
}

func (e *mediaError) Error() string { return e.msg }

// download fetches rawURL into file (through a temporary file, so a failed
// download leaves nothing).
func (e *Emulator) download(ctx context.Context, rawURL, file string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	resp, err := e.mediaClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, maxMediaBytes+1))
	if err == nil && n > maxMediaBytes {
		err = fmt.Errorf("the image is larger than %d GiB", maxMediaBytes>>30)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// serveManagers serves /redfish/v1/Managers[/{id}[/...]]: one BMC manager
// per machine, with the same id, holding the machine's VirtualMedia.
func (h redfishAPI) serveManagers(w http.ResponseWriter, r *http.Request, c creds, m *Machine, sub []string) {
	e := h.e
	if m == nil {
		if r.Method != http.MethodGet {
			methodNotAllowed(w)
			return
		}
		var members []any
		for _, x := range e.machines {
			if x.checkAuth(c.user, c.password) {
				members = append(members, odataID(rfManagers+"/"+x.ID))
			}
		}
		writeJSON(w, http.StatusOK, collection("#ManagerCollection.ManagerCollection", "Manager Collection", rfManagers, members))
		return
	}
	base := rfManagers + "/" + m.ID
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, managerJSON(m))
	case len(sub) >= 1 && sub[0] == "VirtualMedia":
		h.serveVirtualMedia(w, r, m, base+"/VirtualMedia", sub[1:])
	case r.Method != http.MethodGet:
		methodNotAllowed(w)
	default:
		notFound(w, r)
	}
}

func managerJSON(m *Machine) map[string]any {
	base := rfManagers + "/" + m.ID
	return map[string]any{
		"@odata.type": "#Manager.v1_10_0.Manager", "@odata.id": base, "Id": m.ID,
		"Name": "Manager of " + m.ID, "ManagerType": "BMC", "Model": "Anvil BMC emulator",
		"FirmwareVersion": m.firmwareVersion(FirmwareBMC), "UUID": m.UUID, "PowerState": "On", "Status": enabledOK,
		"VirtualMedia": odataID(base + "/VirtualMedia"),
		"Links": map[string]any{
			"ManagerForServers":             []any{odataID(rfSystems + "/" + m.ID)},
			"ManagerForServers@odata.count": 1,
		},
	}
}

// serveVirtualMedia serves the VirtualMedia collection at base (under the
// Manager or the System) and its Cd member: GET, PATCH (Image, Inserted,
// WriteProtected) and the InsertMedia and EjectMedia actions.
func (h redfishAPI) serveVirtualMedia(w http.ResponseWriter, r *http.Request, m *Machine, base string, sub []string) {
	e := h.e
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#VirtualMediaCollection.VirtualMediaCollection", "@odata.id": base,
			"Name": "Virtual Media Services", "Description": "Redfish-BMC Virtual Media Service Settings",
			"Members@odata.count": 1, "Members": []any{odataID(base + "/" + vmediaCd)},
		})
	case len(sub) == 0:
		methodNotAllowed(w)
	case sub[0] != vmediaCd:
		notFound(w, r)
	case len(sub) == 1 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, vmediaJSON(m, base+"/"+vmediaCd))
	case len(sub) == 1 && r.Method == http.MethodPatch:
		h.patchVirtualMedia(w, r, m)
	case len(sub) == 3 && sub[1] == "Actions" && sub[2] == "VirtualMedia.InsertMedia" && r.Method == http.MethodPost:
		h.insertMediaAction(w, r, m)
	case len(sub) == 3 && sub[1] == "Actions" && sub[2] == "VirtualMedia.EjectMedia" && r.Method == http.MethodPost:
		e.EjectMedia(m)
		w.WriteHeader(http.StatusNoContent)
	case len(sub) == 1 || len(sub) == 3 && sub[1] == "Actions":
		methodNotAllowed(w)
	default:
		notFound(w, r)
	}
}

func vmediaJSON(m *Machine, id string) map[string]any {
	md := func() media { m.mu.Lock(); defer m.mu.Unlock(); return m.media }()
	connected := "NotConnected"
	if md.inserted {
		connected = "URI"
	}
	return map[string]any{
		"@odata.type": "#VirtualMedia.v1_4_0.VirtualMedia", "@odata.id": id, "Id": vmediaCd,
		"Name": "Virtual CD", "MediaTypes": []string{"CD", "DVD"},
		"Image": md.image, "ImageName": md.name, "Inserted": md.inserted, "WriteProtected": md.writeProtected,
		"ConnectedVia": connected,
		"TransferProtocolType@Redfish.AllowableValues": []string{"HTTP", "HTTPS"},
		"Actions": map[string]any{
			"#VirtualMedia.InsertMedia": map[string]any{"target": id + "/Actions/VirtualMedia.InsertMedia"},
			"#VirtualMedia.EjectMedia":  map[string]any{"target": id + "/Actions/VirtualMedia.EjectMedia"},
		},
	}
}

// mediaBody is the body of InsertMedia and of PATCH: absent fields are nil.
type mediaBody struct {
	Image          *string
	Inserted       *bool
	WriteProtected *bool
}

func decodeMedia(w http.ResponseWriter, r *http.Request) (mediaBody, bool) {
	var b mediaBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b); err != nil {
		malformedJSON(w)
		return b, false
	}
	return b, true
}

func (h redfishAPI) insertMediaAction(w http.ResponseWriter, r *http.Request, m *Machine) {
	b, ok := decodeMedia(w, r)
	if !ok {
		return
	}
	if b.Image == nil || *b.Image == "" {
		rfError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing",
			"The action VirtualMedia.InsertMedia requires the parameter Image to be present in the request body.")
		return
	}
	if b.Inserted != nil && !*b.Inserted {
		rfError(w, http.StatusBadRequest, "Base.1.8.ActionParameterNotSupported",
			"The parameter Inserted with the value false is not supported by the action VirtualMedia.InsertMedia.")
		return
	}
	h.answerInsert(w, r, m, *b.Image, b.WriteProtected == nil || *b.WriteProtected)
}

// patchVirtualMedia: a non-empty Image inserts it (BMCs without the
// InsertMedia action work this way); an empty Image or Inserted false
// ejects.
func (h redfishAPI) patchVirtualMedia(w http.ResponseWriter, r *http.Request, m *Machine) {
	e := h.e
	b, ok := decodeMedia(w, r)
	if !ok {
		return
	}
	switch {
	case b.Image != nil && *b.Image != "" && (b.Inserted == nil || *b.Inserted):
		h.answerInsert(w, r, m, *b.Image, b.WriteProtected == nil || *b.WriteProtected)
	case b.Image != nil || b.Inserted != nil && !*b.Inserted:
		e.EjectMedia(m)
		w.WriteHeader(http.StatusNoContent)
	case b.WriteProtected != nil:
		m.mu.Lock()
		m.media.writeProtected = *b.WriteProtected
		m.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		rfError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "The request names none of Image, Inserted and WriteProtected.")
	}
}

func (h redfishAPI) answerInsert(w http.ResponseWriter, r *http.Request, m *Machine, image string, wp bool) {
	e := h.e
	if m.Knobs().FailInsertMedia {
		rfError(w, http.StatusInternalServerError, "Base.1.8.InternalError",
			"The request failed due to an internal service error. The service is still operational.")
		return
	}
	err := e.InsertMedia(r.Context(), m, image, wp)
	var me *mediaError
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.As(err, &me) && me.status == http.StatusBadRequest:
		rfError(w, me.status, "Base.1.8.PropertyValueFormatError", me.msg)
	case errors.As(err, &me):
		e.log.Warn("virtual media insert failed", "machine", m.ID, "err", err)
		rfError(w, me.status, "Base.1.8.InternalError", me.msg)
	default:
		rfError(w, http.StatusInternalServerError, "Base.1.8.InternalError", err.Error())
	}
}
