// Package driver is the contract between the conductor and hardware: one small
// interface per capability (power, management, deploy, ...), composed per node
// from the node's *_interface fields, as Ironic's hardware types are.
//
// Implementations live in sub-packages (fake, noop, pxe, ipmi, redfish,
// direct); internal/driver/hardware declares the hardware types over them
// and builds the Registry of the operator's choice (Registry.Enable,
// Ironic's enabled_*/default_* options). The conductor composes each
// node's Driver from the registry and hands it to the interfaces on the
// Task (Ironic's task.driver): an interface reaches the node's other
// interfaces through its task, and no implementation holds the registry.
package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/model"
)

// ErrUnsupported is answered by optional capabilities a driver lacks.
var ErrUnsupported = errors.New("operation not supported by the driver")

// Result says whether an operation finished or parks the node in a wait state
// until something (an agent heartbeat) calls back.
type Result int

// Results of a long operation.
const (
	Done Result = iota // finished: fire "done"
	Wait               // started: fire "wait" and resume on callback
)

// Task is what an interface works on: the node (held under its lock by the
// conductor), its ports and its composed driver. Drivers may change Node
// fields (power_state, driver_internal_info, properties, ...); the
// conductor saves them. Inspect may append newly found ports with an empty
// UUID; the conductor creates them.
type Task struct {
	Node  *model.Node
	Ports []*model.Port
	// Driver is the node's composed driver (Ironic's task.driver), filled
	// by the conductor: an interface reaches the node's other interfaces
	// (a deploy its boot and power, a boot its management) through it
	// alone (Composed), never through the registry.
	Driver *Driver
	// BIOS, when a bios interface sets it, replaces the node's cached BIOS
	// settings (Ironic's cache_bios_settings); Firmware, when a firmware
	// interface sets it, records the versions of the node's firmware
	// components (cache_firmware_components). The conductor saves both.
	BIOS     *[]model.BIOSSetting
	Firmware *[]model.FirmwareComponent
	// Progress, when set, tells the operator at once how a long call is
	// going (the conductor writes it to the node's history, which the
	// event stream and `anvil ... --wait` show); see Report.
	Progress func(msg string)
}

// Report passes msg to Progress, if the task has one: a driver says why a
// call is taking long (a BMC that does not answer, retries) before the
// call ends.
func (t *Task) Report(msg string) {
	if t != nil && t.Progress != nil {
		t.Progress(msg)
	}
}

// ErrNoDriver is answered by an interface that needs the node's other
// interfaces when its task carries no composed driver (a caller's bug).
var ErrNoDriver = errors.New("the task carries no composed driver for the node")

// Composed is the task's driver, or ErrNoDriver.
func (t *Task) Composed() (*Driver, error) {
	if t.Driver == nil {
		return nil, ErrNoDriver
	}
	return t.Driver, nil
}

// SetBootDevice sets the node's boot device through the task's management
// interface; a node without one (manual management) is left alone.
func (t *Task) SetBootDevice(ctx context.Context, dev BootDevice) error {
	drv, err := t.Composed()
	if err != nil {
		return err
	}
	if drv.Management == nil {
		return nil
	}
	if err := drv.Management.SetBootDevice(ctx, t, dev); err != nil {
		return fmt.Errorf("setting boot device to %s: %w", dev.Device, err)
	}
	return nil
}

// Cacher is an optional capability of bios and firmware interfaces: read
// the node's BIOS settings or firmware components into Task.BIOS or
// Task.Firmware. The conductor calls it when cleaning starts and after an
// inspection, as Ironic does; its failure is logged, never fatal. Steps
// that change settings or firmware fill the Task themselves.
type Cacher interface {
	Cache(ctx context.Context, t *Task) error
}

// ArgInfo describes one argument of a step (Ironic's argsinfo entry).
type ArgInfo struct {
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// Validator checks a node's configuration for one interface without touching
// hardware (Ironic's validate(task)). t carries the node and its composed
// driver (an interface that validates another, as a deploy its boot, finds
// it there); its Ports may be empty: the checks that need them are
// PortValidator's. It returns an error whose text says what is missing or
// malformed.
type Validator interface {
	Validate(t *Task) error
}

// PortValidator is an optional capability of any interface: the checks that
// need the node's ports (a network boot needs a MAC). The conductor runs it
// after Validate wherever it validates with the ports at hand.
type PortValidator interface {
	ValidatePorts(t *Task) error
}

// Power controls and reads a node's power.
type Power interface {
	Validator
	// PowerState reads the current state: fsm.PowerOn, fsm.PowerOff or "" (unknown).
	PowerState(ctx context.Context, t *Task) (string, error)
	// SetPowerState moves to fsm.PowerOn, PowerOff, Rebooting, SoftPowerOff or
	// SoftRebooting, returning when done or on ctx's end.
	SetPowerState(ctx context.Context, t *Task, target string) error
}

// BootDevice is a boot device setting.
type BootDevice struct {
	Device     string // pxe, disk, cdrom, bios, safe, wanboot, uefihttp
	Persistent bool
	// HTTPBootURI is what a uefihttp boot downloads (Redfish's
	// Boot.HttpBootUri); empty leaves the URL to the firmware's DHCP.
	HTTPBootURI string
}

// Management sets and reads the boot device.
type Management interface {
	Validator
	BootDevice(ctx context.Context, t *Task) (BootDevice, error)
	SetBootDevice(ctx context.Context, t *Task, dev BootDevice) error
	SupportedBootDevices(ctx context.Context, t *Task) ([]string, error)
}

// VirtualMedia is one virtual media device of a BMC (what Ironic's
// GET /v1/nodes/{node}/vmedia lists).
type VirtualMedia struct {
	MediaTypes []string `json:"media_types"` // Redfish MediaTypes: CD, DVD, Floppy, USBStick
	Inserted   bool     `json:"inserted"`
	Image      string   `json:"image"`
}

// VirtualMediaManager is an optional Management capability: the virtual
// media of Ironic's vmedia API. Device types are "cdrom", "floppy" and
// "disk" (Ironic's boot_devices.VMEDIA_DEVICES). Management interfaces
// without it answer Ironic's UnsupportedDriverExtension.
type VirtualMediaManager interface {
	GetVirtualMedia(ctx context.Context, t *Task) ([]VirtualMedia, error)
	// AttachVirtualMedia inserts the image at url into a device of deviceType.
	AttachVirtualMedia(ctx context.Context, t *Task, deviceType, url string) error
	// DetachVirtualMedia ejects the devices of deviceTypes (none: every device).
	DetachVirtualMedia(ctx context.Context, t *Task, deviceTypes []string) error
}

// KernelAppendParams is the kernel command line addition a boot interface
// gives a node's ramdisk: kernel_append_params from instance_info, else
// driver_info, else def (the interface's configured default); "%default%"
// in the node's value stands for def (Ironic's rule).
func KernelAppendParams(n *model.Node, def string) string {
	for _, m := range []model.JSON{n.InstanceInfo, n.DriverInfo} {
		if v, ok := m["kernel_append_params"].(string); ok {
			return strings.TrimSpace(strings.ReplaceAll(v, "%default%", def))
		}
	}
	return def
}

// Ramdisk modes: what a ramdisk is booted for (PrepareRamdisk).
const (
	RamdiskDeploy = "deploy" // deploy, clean, inspect and service: driver_info deploy_kernel/deploy_ramdisk
	RamdiskRescue = "rescue" // rescue: driver_info rescue_kernel/rescue_ramdisk
)

// Boot prepares what a node boots, as Ironic's BootInterface: the agent
// ramdisk for deploy, clean, inspect and rescue, then the instance from disk.
// A network boot interface publishes the node's boot files (keyed by its
// ports' MACs) and sets the boot device; fake only sets the boot device.
type Boot interface {
	Validator
	// PrepareRamdisk makes the node's next boot start the ramdisk of mode
	// (RamdiskDeploy or RamdiskRescue); the caller powers the node on.
	PrepareRamdisk(ctx context.Context, t *Task, mode string) error
	// CleanUpRamdisk withdraws what PrepareRamdisk published.
	CleanUpRamdisk(ctx context.Context, t *Task) error
	// PrepareInstance makes the node boot its instance from disk.
	PrepareInstance(ctx context.Context, t *Task) error
	// CleanUpInstance withdraws what PrepareInstance published.
	CleanUpInstance(ctx context.Context, t *Task) error
}

// RescueValidator is an optional Boot capability: the checks a rescue needs
// (Ironic's validate_rescue, e.g. rescue_kernel and rescue_ramdisk).
type RescueValidator interface {
	ValidateRescue(n *model.Node) error
}

// Deploy writes an instance to a node and tears it down.
type Deploy interface {
	Validator
	Deploy(ctx context.Context, t *Task) (Result, error)
	TearDown(ctx context.Context, t *Task) error
}

// Inspect discovers a node's hardware.
type Inspect interface {
	Validator
	Inspect(ctx context.Context, t *Task) (Result, error)
}

// Rescue boots a node into a rescue environment and back.
type Rescue interface {
	Validator
	Rescue(ctx context.Context, t *Task) (Result, error)
	Unrescue(ctx context.Context, t *Task) error
}

// Adopter takes over a node that is already deployed (optional on Deploy).
type Adopter interface {
	Adopt(ctx context.Context, t *Task) error
}

// Resumer continues an operation that answered Wait once its callback (an
// agent heartbeat) arrives. op is "deploy", "clean", "inspect", "rescue" or
// "service". Implementations without it are taken to be done on callback.
type Resumer interface {
	Continue(ctx context.Context, t *Task, op string) (Result, error)
}

// StepFinisher is a Resumer whose step, once Continue finds it done on a
// heartbeat (the node still in its wait state), has work left that moves
// the machine away from the agent — the direct deploy's reboot into the
// instance. The conductor saves the node's resume first and then calls
// FinishStep, so a conductor that dies in it leaves the node in its
// operation's running state, which a take-over fails with why, not in the
// wait state, waiting for an agent that is gone. An error fails the step.
type StepFinisher interface {
	FinishStep(ctx context.Context, t *Task, op string) error
}

// CleanFinisher is an optional Deploy capability called once cleaning has run
// its steps (Ironic's tear_down_cleaning): an agent-based interface powers the
// node off and forgets the agent. An error fails the clean.
type CleanFinisher interface {
	FinishCleaning(ctx context.Context, t *Task) error
}

// RamdiskCleaner is an optional capability of the deploy, inspect and rescue
// interfaces that boot the agent ramdisk. The conductor calls it when the
// operation fails, times out or is aborted (Ironic's cleaning, deploying
// and rescuing error handlers, its clean and rescue aborts, inspection's
// tear down of the boot it manages): the agent is forgotten, the node
// powered off when powerOff says so (never a node with disable_power_off)
// and the boot interface withdraws the ramdisk (CleanUpRamdisk). Whether
// to power off is the conductor's decision, as it is Ironic's.
type RamdiskCleaner interface {
	CleanUpRamdisk(ctx context.Context, t *Task, powerOff bool) error
}

// Step is a clean, deploy or service step an interface offers or a user asks for.
type Step struct {
	Interface string     `json:"interface"`
	Step      string     `json:"step"`
	Priority  int        `json:"priority"`
	Args      model.JSON `json:"args,omitempty"`
	Abortable bool       `json:"abortable,omitempty"`
	// ArgsInfo is the arguments the step takes (nil: not checked); a user step
	// with an argument it does not take, or without a required one, is
	// refused before it runs, as Ironic's _validate_user_step.
	ArgsInfo map[string]ArgInfo `json:"argsinfo,omitempty"`
}

// StepLearner is an optional Stepper capability: the interface also runs
// steps of kind that only its agent knows, learnt once the agent runs
// (Ironic's in-band deploy steps, which it fetches from the agent after
// it boots). The conductor plans a user's step of that interface which it
// does not offer (yet) as the user asked; ExecuteStep refuses it if the
// agent turns out not to offer it either.
type StepLearner interface {
	LearnsSteps(kind StepKind) bool
}

// StepKind names the three step families.
type StepKind string

// Step kinds.
const (
	CleanSteps   StepKind = "clean"
	DeploySteps  StepKind = "deploy"
	ServiceSteps StepKind = "service"
)

// Stepper offers steps and executes them. Any interface may implement it.
type Stepper interface {
	// Steps lists the steps of kind the implementation offers for the node
	// when it fills interface slot iface ("deploy", "bios", ...), with their
	// default priorities (0 = manual only).
	Steps(n *model.Node, iface string, kind StepKind) []Step
	// ExecuteStep runs one step; Wait parks the node until a callback.
	ExecuteStep(ctx context.Context, t *Task, kind StepKind, s Step) (Result, error)
}

// Driver is a node's composed set of interfaces. Slots the hardware type
// lacks are nil; Names records which implementation fills each slot.
type Driver struct {
	Power      Power
	Management Management
	Boot       Boot
	Deploy     Deploy
	Inspect    Inspect
	Rescue     Rescue
	// Others holds the interfaces that only validate and offer steps
	// (bios, raid, console, vendor, network, storage, firmware), by kind.
	Others map[string]Validator
	Names  map[string]string
}

// Interface returns the implementation in slot kind, or nil.
func (d *Driver) Interface(kind string) any {
	var v any
	switch kind {
	case "power":
		v = d.Power
	case "management":
		v = d.Management
	case "boot":
		v = d.Boot
	case "deploy":
		v = d.Deploy
	case "inspect":
		v = d.Inspect
	case "rescue":
		v = d.Rescue
	default:
		v = d.Others[kind]
	}
	if v == nil {
		return nil
	}
	return v
}

// KeyOriginalDeployInterface is where a switched node keeps the deploy
// interface it had (Ironic's original_deploy_interface).
const KeyOriginalDeployInterface = "original_deploy_interface"

// DeploySwitcher is an optional Deploy capability (Ironic's
// switch_interface): before a deploy is validated the interface names the
// concrete deploy interface the node switches to for it; the conductor
// records the original (KeyOriginalDeployInterface) and restores it when
// the instance is torn down.
type DeploySwitcher interface {
	SwitchDeploy(ctx context.Context, n *model.Node) (string, error)
}
