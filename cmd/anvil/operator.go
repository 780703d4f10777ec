package main

import (
	"io"

	"github.com/spf13/cobra"
)

// operatorCommands are the operator CLI (`anvil node ...`, `anvil port ...`,
// `anvil fleet report`, ...), in python-ironicclient's grammar.
func operatorCommands(stdout, stderr io.Writer) []*cobra.Command {
	return nil
}
