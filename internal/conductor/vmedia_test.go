package conductor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/model"
)

// vmManagement is fake management with virtual media in memory.
type vmManagement struct {
	*fake.Hardware
	mu    sync.Mutex
	media map[string]string // device type → image
	fail  error
}

func (m *vmManagement) GetVirtualMedia(ctx context.Context, t *driver.Task) ([]driver.VirtualMedia, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cd := m.media["cdrom"]
	return []driver.VirtualMedia{{MediaTypes: []string{"CD", "DVD"}, Inserted: cd != "", Image: cd}}, nil
}

func (m *vmManagement) AttachVirtualMedia(ctx context.Context, t *driver.Task, typ, url string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.media[typ] = url
	return nil
}

func (m *vmManagement) DetachVirtualMedia(ctx context.Context, t *driver.Task, types []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if types == nil {
		m.media = map[string]string{}
	}
	for _, typ := range types {
		delete(m.media, typ)
	}
	return nil
}

func TestVirtualMediaVerbs(t *testing.T) {
	var vm *vmManagement
	e := newEnv(t, func(c *conductor.Config) {
		vm = &vmManagement{Hardware: fake.New(), media: map[string]string{}}
		c.Drivers.AddInterface("management", "vm-test", vm)
	})
	n := &model.Node{Driver: "fake-hardware"}
	n.Interfaces.Set("management", "vm-test")
	if err := e.c.Nodes().CreateNode(e.ctx, n, false); err != nil {
		t.Fatal(err)
	}
	attach := conductor.VirtualMediaAttach{DeviceType: "cdrom", ImageURL: "http://127.0.0.1:8080/x.iso", DownloadSource: "http"}
	if err := e.c.Management().AttachVirtualMedia(e.ctx, n.UUID, attach); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	got, err := e.c.Management().GetVirtualMedia(e.ctx, n.UUID)
	if err != nil || len(got) != 1 || !got[0].Inserted || got[0].Image != attach.ImageURL {
		t.Fatalf("after attach: %v, %v", got, err)
	}
	if err := e.c.Management().DetachVirtualMedia(e.ctx, n.UUID, "", nil); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	if got, _ := e.c.Management().GetVirtualMedia(e.ctx, n.UUID); got[0].Inserted {
		t.Fatalf("after detach: %v", got)
	}
	if r := e.get(n.UUID); r.Reservation != "" || r.LastError != "" {
		t.Errorf("reservation %q, last_error %q", r.Reservation, r.LastError)
	}

	// A failing BMC: the API call succeeded, the failure is last_error.
	vm.fail = errors.New("BMC says no")
	if err := e.c.Management().AttachVirtualMedia(e.ctx, n.UUID, attach); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	if le := e.get(n.UUID).LastError; le != "Could not attach device cdrom to node "+n.UUID+": BMC says no" {
		t.Errorf("last_error %q", le)
	}
}

// TestVirtualMediaUnsupported: management without virtual media answers
// Ironic's UnsupportedDriverExtension: GET at once, attach and detach in
// last_error (Ironic finds out in the worker too).
func TestVirtualMediaUnsupported(t *testing.T) {
	e := newEnv(t, nil)
	n := e.create(nil)
	_, err := e.c.Management().GetVirtualMedia(e.ctx, n.UUID)
	if err == nil || err.Error() != "Driver fake-hardware does not support get_virtual_media (disabled or not implemented)." {
		t.Errorf("get: %v", err)
	}
	if err := e.c.Management().AttachVirtualMedia(e.ctx, n.UUID, conductor.VirtualMediaAttach{DeviceType: "cdrom", ImageURL: "http://x/y.iso"}); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	if le := e.get(n.UUID).LastError; le != "Could not attach device cdrom to node "+n.UUID+": Driver fake-hardware does not support attach_virtual_media (disabled or not implemented)." {
		t.Errorf("attach last_error %q", le)
	}
	if err := e.c.Management().DetachVirtualMedia(e.ctx, n.UUID, "", []string{"cdrom", "floppy"}); err != nil {
		t.Fatal(err)
	}
	e.c.WaitIdle()
	if le := e.get(n.UUID).LastError; !strings.HasPrefix(le, "Could not detach device(s) ['cdrom', 'floppy'] from node "+n.UUID+": Driver fake-hardware does not support detach_virtual_media") {
		t.Errorf("detach last_error %q", le)
	}
	if _, err := e.c.Management().GetVirtualMedia(e.ctx, "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown node: %v", err)
	}
}
