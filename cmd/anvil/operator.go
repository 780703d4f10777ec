package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/cli"
)

// operatorCommands are the operator CLI (`anvil node ...`, `anvil port ...`,
// `anvil fleet report`, ...), in python-ironicclient's grammar.
func operatorCommands(stdout, stderr io.Writer) []*cobra.Command {
	return cli.Commands(cli.Env{
		Stdout:     stdout,
		Stderr:     stderr,
		Stdin:      os.Stdin,
		Getenv:     os.Getenv,
		Exit:       os.Exit,
		IsTerminal: cli.IsTerminal,
	})
}
