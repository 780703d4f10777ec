// Package direct is the conductor side of the deploy agent, speaking the
// Ironic Python Agent's protocol (internal/ipa), so that it drives a stock
// IPA ramdisk as well as `anvil agent`: the "direct" deploy interface boots
// a node into the agent (the node's boot interface prepares the ramdisk,
// then power on), waits for the agent's heartbeat, then runs, as Ironic's
// direct deploy does, standby.prepare_image (the image streamed to the disk
// and verified against the checksum decided here, ipa.InstanceChecksum),
// standby.get_partition_uuids, image.install_bootloader for a partition
// image (a whole-disk image needs none) and standby.sync, and boots the node
// from disk (the boot interface prepares the instance). The agent's clean
// steps (ipa.CleanSteps: erase_devices_metadata with priority 99 in
// automated cleaning, erase_devices on demand) run with
// clean.execute_clean_step; the "agent" rescue interface sends
// rescue.finalize_rescue; the "agent" inspect interface waits for the
// inventory the agent posts to /v1/continue_inspection. When an agent
// command fails and Config.LogsDir is set, the agent's logs
// (log.collect_system_logs) are saved there and the failure names the file.
//
// Two more deploy interfaces share its agent plumbing (ramdisk.go,
// custom.go): "ramdisk" (Ironic's RamdiskDeploy) has the boot interface
// boot the instance's own kernel and ramdisk or ISO
// (driver.RamdiskBooter) and leaves it running, no agent and no disk
// write; "custom-agent" (Ironic's CustomAgentDeploy) boots the agent and
// runs only the in-band deploy steps the user names
// (deploy.execute_deploy_step), learnt from the agent
// (deploy.get_deploy_steps) when it first heartbeats, then
// prepare_instance_boot, tear_down_agent and boot_instance. Both clean and
// tear down as direct.
//
// Every command to the agent is polled on the node's heartbeats: Continue
// answers driver.Wait until the agent reports the command done (the agent
// heartbeats as soon as an asynchronous command ends), so no goroutine
// waits on a machine. The agent's token travels in the agent_token query
// parameter, as IPA reads it, and is never part of an error or log line
// (ipa.RedactURL).
package direct
