package ipa

// Step is a clean or deploy step as an agent lists it (IPA's
// get_clean_steps/get_deploy_steps entries).
type Step struct {
	Step            string `json:"step"`
	Priority        int    `json:"priority"`
	Interface       string `json:"interface"`
	RebootRequested bool   `json:"reboot_requested"`
	Abortable       bool   `json:"abortable"`
}

// Step names.
const (
	StepEraseDevicesMetadata = "erase_devices_metadata"
	StepEraseDevices         = "erase_devices"
	StepWriteImage           = "write_image"
)

// HardwareManager names Anvil's agent's steps and versions them: the
// version is sent back as clean_version/deploy_version, and an agent whose
// version differs answers StatusVersionMismatch.
const (
	HardwareManager        = "AnvilHardwareManager"
	HardwareManagerVersion = "1.0"
)

// CleanSteps are the clean steps the agent offers, defined once: the agent
// lists them (clean.get_clean_steps) and the conductor plans with them.
// erase_devices_metadata runs in automated cleaning (priority 99, as IPA's);
// erase_devices (a full overwrite) only on request (IPA gives it 10, which
// Ironic runs by default; Anvil does not shred disks unless asked).
func CleanSteps() []Step {
	return []Step{
		{Step: StepEraseDevicesMetadata, Priority: 99, Interface: "deploy", Abortable: true},
		{Step: StepEraseDevices, Priority: 0, Interface: "deploy", Abortable: true},
	}
}

// DeploySteps are the in-band deploy steps the agent offers: write_image,
// which Ironic's out-of-band write_image step (priority 80) proxies with
// image_info and configdrive arguments, and erase_devices_metadata.
func DeploySteps() []Step {
	return []Step{
		{Step: StepEraseDevicesMetadata, Priority: 0, Interface: "deploy"},
		{Step: StepWriteImage, Priority: 0, Interface: "deploy"},
	}
}

// StepsResult is the command_result of clean.get_clean_steps (key
// "clean_steps") and deploy.get_deploy_steps ("deploy_steps"): steps by
// hardware manager, and the managers' versions.
func StepsResult(kind string, steps []Step) map[string]any {
	list := make([]any, len(steps))
	for i, s := range steps {
		list[i] = map[string]any{"step": s.Step, "priority": s.Priority, "interface": s.Interface,
			"reboot_requested": s.RebootRequested, "abortable": s.Abortable}
	}
	return map[string]any{
		kind + "_steps":            map[string]any{HardwareManager: list},
		"hardware_manager_version": map[string]any{HardwareManager: HardwareManagerVersion},
	}
}
