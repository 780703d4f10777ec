package driver

import (
	"context"
	"io"

	"github.com/anvil-metal/anvil/internal/model"
)

// Console is a console interface that reaches the node's serial console
// (the console service of internal/console holds the connection).
type Console interface {
	// Validate checks what the interface needs in driver_info, without
	// contacting the BMC.
	Validate(t *Task) error
	// ConsoleInfo is the node's console_info while its console is enabled:
	// "type" and "url". A url starting with "/" is a path of the API, which
	// the API makes absolute (ws:// or wss://).
	ConsoleInfo(n *model.Node) map[string]any
	// OpenConsole connects to the console: reading gives its output,
	// writing types into it, closing ends the BMC session.
	OpenConsole(ctx context.Context, n *model.Node) (io.ReadWriteCloser, error)
}

// ConsoleWSPath is the API path of a node's console WebSocket (an Anvil
// extension): console_info.url of the WebSocket console interfaces.
func ConsoleWSPath(nodeUUID string) string { return "/v1/nodes/" + nodeUUID + "/console/ws" }
