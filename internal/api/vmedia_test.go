package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/model"
)

// vmFake is fake management with in-memory virtual media (a CD and a floppy).
type vmFake struct {
	*fake.Hardware
	mu    sync.Mutex
	media map[string]string // device type → image
}

func (m *vmFake) GetVirtualMedia(context.Context, *driver.Task) ([]driver.VirtualMedia, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return []driver.VirtualMedia{
		{MediaTypes: []string{"CD", "DVD"}, Inserted: m.media["cdrom"] != "", Image: m.media["cdrom"]},
		{MediaTypes: []string{"Floppy", "USBStick"}, Inserted: m.media["floppy"] != "", Image: m.media["floppy"]},
	}, nil
}

func (m *vmFake) AttachVirtualMedia(_ context.Context, _ *driver.Task, typ, url string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.media[typ] = url
	return nil
}

func (m *vmFake) DetachVirtualMedia(_ context.Context, _ *driver.Task, types []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if types == nil {
		clear(m.media)
	}
	for _, typ := range types {
		delete(m.media, typ)
	}
	return nil
}

func vmediaEnv(t *testing.T) (*env, *model.Node) {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 12, 2, 12, 16, 3, 0, time.UTC)}
	vm := &vmFake{Hardware: fake.New(), media: map[string]string{}}
	st, fc := newTestBackendWith(t, "anvil-test", clock.Now, func(r *driver.Registry) {
		r.AddInterface("management", "vm-test", vm)
	})
	e := &env{t: t, h: New(Wire(Config{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, fc)),
		st: st, cond: fc, clock: clock}
	rec := e.do("POST", "/v1/nodes", `{"name": "vm", "driver": "fake-hardware", "management_interface": "vm-test"}`, latest)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	n := &model.Node{}
	json.Unmarshal(rec.Body.Bytes(), n)
	return e, n
}

func TestVmediaRoundTrip(t *testing.T) {
	e, _ := vmediaEnv(t)
	get := func() string {
		t.Helper()
		rec := e.do("GET", "/v1/nodes/vm/vmedia", "", at(93))
		if rec.Code != 200 {
			t.Fatalf("GET vmedia: %d %s", rec.Code, rec.Body)
		}
		return strings.TrimSpace(rec.Body.String())
	}
	if got, want := get(), `[{"media_types": ["CD", "DVD"], "inserted": false, "image": ""}, {"media_types": ["Floppy", "USBStick"], "inserted": false, "image": ""}]`; got != want {
		t.Errorf("GET vmedia\n got %s\nwant %s", got, want)
	}
	for _, body := range []string{`{"device_type": "cdrom", "image_url": "http://127.0.0.1:8080/a.iso"}`,
		`{"device_type": "floppy", "image_url": "https://127.0.0.1:8443/f.img", "image_download_source": "http"}`} {
		if rec := e.do("POST", "/v1/nodes/vm/vmedia", body, at(89)); rec.Code != 204 || rec.Body.Len() != 0 {
			t.Fatalf("POST %s: %d %s", body, rec.Code, rec.Body)
		}
		e.cond.WaitIdle()
	}
	if got := get(); !strings.Contains(got, `"inserted": true, "image": "http://127.0.0.1:8080/a.iso"`) || !strings.Contains(got, `"inserted": true, "image": "https://127.0.0.1:8443/f.img"`) {
		t.Errorf("after attach: %s", got)
	}
	if rec := e.do("DELETE", "/v1/nodes/vm/vmedia?device_types=CDROM", "", at(89)); rec.Code != 204 {
		t.Fatalf("DELETE cdrom: %d %s", rec.Code, rec.Body)
	}
	e.cond.WaitIdle()
	if got := get(); strings.Contains(got, "a.iso") || !strings.Contains(got, "f.img") {
		t.Errorf("after detaching the cdrom: %s", got)
	}
	if rec := e.do("DELETE", "/v1/nodes/vm/vmedia/floppy", "", at(93)); rec.Code != 204 {
		t.Fatalf("DELETE .../vmedia/floppy: %d %s", rec.Code, rec.Body)
	}
	e.cond.WaitIdle()
	if got := get(); strings.Contains(got, `"inserted": true`) {
		t.Errorf("after detaching the floppy: %s", got)
	}
	e.do("POST", "/v1/nodes/vm/vmedia", `{"device_type": "cdrom", "image_url": "http://127.0.0.1:8080/a.iso"}`, at(89))
	e.cond.WaitIdle()
	if rec := e.do("DELETE", "/v1/nodes/vm/vmedia", "", at(89)); rec.Code != 204 {
		t.Fatalf("DELETE all: %d %s", rec.Code, rec.Body)
	}
	e.cond.WaitIdle()
	if got := get(); strings.Contains(got, `"inserted": true`) {
		t.Errorf("after detaching all: %s", got)
	}
}

// TestVmediaRefused: below the versions the resource does not exist;
// bodies Ironic's validator refuses get its messages; a driver without
// virtual media answers UnsupportedDriverExtension.
func TestVmediaRefused(t *testing.T) {
	e, n := vmediaEnv(t)
	good := `{"device_type": "cdrom", "image_url": "http://127.0.0.1/a.iso"}`
	for _, tc := range []struct {
		method, path, body string
		minor              int
		status             int
		msg                string
	}{
		{"GET", "/v1/nodes/vm/vmedia", "", 92, 404, "Resource could not be found."},
		{"GET", "/v1/nodes/vm/vmedia", "", 89, 404, "Resource could not be found."},
		{"DELETE", "/v1/nodes/vm/vmedia/cdrom", "", 88, 404, "Resource could not be found."},
		{"POST", "/v1/nodes/vm/vmedia", good, 88, 404, "Resource could not be found."},
		{"DELETE", "/v1/nodes/vm/vmedia", "", 88, 404, "Resource could not be found."},
		{"POST", "/v1/nodes/vm/vmedia", `{"image_url": "http://image"}`, 89, 400, "Schema error for vmedia: 'device_type' is a required property"},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": "cdrom"}`, 89, 400, "Schema error for vmedia: 'image_url' is a required property"},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": "cat", "image_url": "http://image"}`, 89, 400, "Schema error for vmedia: 'cat' is not one of ['disk', 'cdrom', 'floppy']"},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": "CDROM", "image_url": "http://image"}`, 89, 400, "Schema error for vmedia: 'CDROM' is not one of ['disk', 'cdrom', 'floppy']"},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": 5, "image_url": 7}`, 89, 400, "Schema error for vmedia: 5 is not of type 'string'"},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": "cdrom", "image_url": "http://i", "username": "u"}`, 89, 400, "Schema error for vmedia: Additional properties are not allowed ('username' was unexpected)"},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": "cdrom", "image_url": "http://i", "image_download_source": "glance"}`, 89, 400, "Schema error for vmedia: 'glance' is not one of ['http', 'local', 'swift']"},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": "cdrom", "image_url": "abcd"}`, 89, 400, "Unsupported or missing URL scheme: "},
		{"POST", "/v1/nodes/vm/vmedia", `{"device_type": "cdrom", "image_url": "file:///etc/passwd"}`, 89, 400, "Unsupported or missing URL scheme: file"},
		{"POST", "/v1/nodes/vm/vmedia", `[1]`, 89, 400, "Schema error for vmedia: [1] is not of type 'object'"},
		{"DELETE", "/v1/nodes/vm/vmedia?device_types=cdrom,cat", "", 89, 400, "Invalid device type(s) cat (valid are disk, cdrom, floppy)"},
		{"DELETE", "/v1/nodes/vm/vmedia?other=1", "", 89, 400, "Unexpected arguments: other"},
		{"POST", "/v1/nodes/nope/vmedia", good, 89, 404, "Node nope could not be found."},
		{"GET", "/v1/nodes/nope/vmedia", "", 93, 404, "Node nope could not be found."},
	} {
		rec := e.do(tc.method, tc.path, tc.body, at(tc.minor))
		if rec.Code != tc.status {
			t.Errorf("%s %s %s at 1.%d: %d %s, want %d", tc.method, tc.path, tc.body, tc.minor, rec.Code, rec.Body, tc.status)
			continue
		}
		if _, msg := faultOf(t, rec); msg != tc.msg {
			t.Errorf("%s %s %s at 1.%d: %q, want %q", tc.method, tc.path, tc.body, tc.minor, msg, tc.msg)
		}
	}
	e.cond.WaitIdle()
	if got, _ := e.st.Nodes().GetNode(context.Background(), n.UUID); got.LastError != "" {
		t.Errorf("refused requests reached the node: last_error %q", got.LastError)
	}

	// fake management has no virtual media
	rec := e.do("POST", "/v1/nodes", `{"name": "plain", "driver": "fake-hardware"}`, latest)
	if rec.Code != 201 {
		t.Fatal(rec.Body)
	}
	rec = e.do("GET", "/v1/nodes/plain/vmedia", "", at(93))
	if _, msg := faultOf(t, rec); rec.Code != 400 || msg != "Driver fake-hardware does not support get_virtual_media (disabled or not implemented)." {
		t.Errorf("GET on fake: %d %q", rec.Code, msg)
	}
	if rec := e.do("POST", "/v1/nodes/plain/vmedia", good, at(89)); rec.Code != 204 {
		t.Fatalf("POST on fake: %d %s (Ironic accepts and fails in the worker)", rec.Code, rec.Body)
	}
	e.cond.WaitIdle()
	plain, _ := e.st.Nodes().GetNode(context.Background(), "plain")
	if !strings.HasSuffix(plain.LastError, ": Driver fake-hardware does not support attach_virtual_media (disabled or not implemented).") {
		t.Errorf("last_error after POST on fake: %q", plain.LastError)
	}
}
