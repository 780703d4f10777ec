package main

import (
	"io"

	"github.com/spf13/cobra"
)

// hardwareCommands are the commands that stand in for hardware
// (`anvil bmc-emulator`, `anvil demo`).
func hardwareCommands(stdout, stderr io.Writer) []*cobra.Command {
	return nil
}
