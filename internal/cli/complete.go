package cli

import (
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Shell completion: `anvil completion bash|zsh|fish` (cobra's) completes
// commands and options; the functions here complete node names from the
// API and state names from the state machine.

// completionTimeout bounds the API call behind a completion.
const completionTimeout = 3 * time.Second

// completeNodes offers the names (or UUIDs) of the nodes.
func (a *app) completeNodes(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := ctxTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	nodes, err := c.List(ctx, "/v1/nodes", "nodes", url.Values{"fields": {"uuid,name"}}, 0)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range nodes {
		name, _ := n["name"].(string)
		id := firstNonEmpty(name, pyrepr.Str(n["uuid"]))
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeStates offers the provision states.
func completeStates(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, s := range fsm.States() {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeWaitStates offers the states `node wait --for` takes.
func completeWaitStates(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	out, dir := completeStates(cmd, args, prefix)
	for _, p := range []string{fsm.PowerOn, fsm.PowerOff} {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out, dir
}

// fixedCompletion offers a fixed list of words.
func fixedCompletion(words ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, w := range words {
			if strings.HasPrefix(w, prefix) {
				out = append(out, w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
