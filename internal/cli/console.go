package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// `anvil node console NODE`: attach the terminal to the node's serial
// console over the API's WebSocket (console_info.url of ipmi-sol), raw
// mode, `~.` at the start of a line to leave (`~~` types one `~`), as ssh.
func (a *app) nodeConsoleCmd() *cobra.Command {
	var replay int
	cmd := &cobra.Command{Use: "console <node>", Short: "Attach to a node's serial console (~. to leave)",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	cmd.Flags().IntVar(&replay, "replay", 0, "show the last BYTES of console output first")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		target, err := consoleURL(ctx, c, args[0])
		if err != nil {
			return err
		}
		if replay > 0 {
			target += "?replay=" + strconv.Itoa(replay)
		}
		return attachConsole(ctx, c, target, a.env.Stdin, a.env.Stdout, a.env.Stderr)
	})
	return cmd
}

// `anvil node console-log NODE`: the recorded console output.
func (a *app) nodeConsoleLogCmd() *cobra.Command {
	var tail int
	cmd := &cobra.Command{Use: "console-log <node>", Short: "Print a node's recorded console output",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	cmd.Flags().IntVar(&tail, "tail", 0, "only the last BYTES (all that is kept, 1 MiB at most, when 0)")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		if tail < 0 {
			return usageErrorf("argument --tail: must not be negative")
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		target := c.base + nodePath(args[0], "console", "log")
		if tail > 0 {
			target += "?" + url.Values{"tail": {strconv.Itoa(tail)}}.Encode()
		}
		data, err := c.once(ctx, http.MethodGet, target, c.currentVersion(), nil)
		if err != nil {
			return err
		}
		_, err = a.env.Stdout.Write(data)
		return err
	})
	return cmd
}

// consoleURL reads the node's console state: its WebSocket URL when the
// console is enabled and served over WebSocket.
func consoleURL(ctx context.Context, c *Client, node string) (string, error) {
	var st struct {
		Enabled bool           `json:"console_enabled"`
		Info    map[string]any `json:"console_info"`
	}
	if err := c.Get(ctx, nodePath(node, "states", "console"), nil, &st); err != nil {
		return "", err
	}
	if !st.Enabled {
		return "", fmt.Errorf("the console of node %s is not enabled (enable it with PUT /v1/nodes/%s/states/console {\"enabled\": true})", node, node)
	}
	u, _ := st.Info["url"].(string)
	if typ, _ := st.Info["type"].(string); typ != "websocket" || !(strings.HasPrefix(u, "ws://") || strings.HasPrefix(u, "wss://")) {
		return "", fmt.Errorf("the console of node %s is not a WebSocket console (type %v, url %v): use its own client", node, st.Info["type"], st.Info["url"])
	}
	return u, nil
}

// consoleDialAttempts: a console just enabled is connected by the
// conductor within moments; the API answers 503 until then.
const consoleDialAttempts = 10

// attachConsole relays between the terminal and the console WebSocket at
// target until the console ends or the user types ~. at a line start.
func attachConsole(ctx context.Context, c *Client, target string, in io.Reader, out, errOut io.Writer) error {
	opts := &websocket.DialOptions{HTTPClient: &http.Client{Transport: c.cfg.Transport}, HTTPHeader: c.authHeader()}
	var conn *websocket.Conn
	for attempt := 1; ; attempt++ {
		var resp *http.Response
		var err error
		conn, resp, err = websocket.Dial(ctx, target, opts)
		if err == nil {
			break
		}
		if resp == nil {
			return fmt.Errorf("console %s: %w", target, err)
		}
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		}
		ae := parseError(resp.StatusCode, body)
		if resp.StatusCode != http.StatusServiceUnavailable || attempt == consoleDialAttempts {
			return ae
		}
		if err := c.sleep(ctx, c.backoff(min(attempt, 3))); err != nil {
			return ae
		}
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)

	nl := "\n"
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		old, err := term.MakeRaw(int(f.Fd()))
		if err == nil {
			defer func() { _ = term.Restore(int(f.Fd()), old) }()
			nl = "\r\n"
		}
	}
	fmt.Fprintf(errOut, "[anvil: connected to %s; ~. to leave]%s", target, nl)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	left := make(chan struct{})
	go func() {
		defer cancel()
		esc := &escaper{lineStart: true}
		buf := make([]byte, 1024)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				p, quit := esc.feed(buf[:n])
				if len(p) > 0 {
					wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
					werr := conn.Write(wctx, websocket.MessageBinary, p)
					wcancel()
					if werr != nil {
						return
					}
				}
				if quit {
					close(left)
					return
				}
			}
			if err != nil {
				return // stdin closed: keep watching until the console ends
			}
		}
	}()
	for {
		typ, p, err := conn.Read(ctx)
		if err != nil {
			select {
			case <-left:
				fmt.Fprintf(errOut, "%s[anvil: left the console]%s", nl, nl)
				_ = conn.Close(websocket.StatusNormalClosure, "")
				return nil
			default:
			}
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure || errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("console: %w", err)
		}
		if typ == websocket.MessageBinary {
			if _, err := out.Write(p); err != nil {
				return err
			}
			continue
		}
		var msg struct {
			Type     string `json:"type"`
			ReadOnly bool   `json:"read_only"`
			Reason   string `json:"reason"`
		}
		if json.Unmarshal(p, &msg) != nil {
			continue
		}
		switch msg.Type {
		case "status":
			if msg.ReadOnly {
				fmt.Fprintf(errOut, "[anvil: read-only: another viewer has the keyboard]%s", nl)
			} else {
				fmt.Fprintf(errOut, "[anvil: you have the keyboard]%s", nl)
			}
		case "end":
			fmt.Fprintf(errOut, "%s[anvil: console ended: %s]%s", nl, msg.Reason, nl)
		}
	}
}

// escaper finds ssh's escape sequences in typed bytes: at the start of a
// line, "~." leaves and "~~" types one "~"; any other "~x" is typed as is.
type escaper struct {
	lineStart bool
	tilde     bool // a line-start "~" is held back
}

func (e *escaper) feed(p []byte) (out []byte, quit bool) {
	for _, b := range p {
		if e.tilde {
			e.tilde = false
			switch b {
			case '.':
				return out, true
			case '~':
				out = append(out, '~')
				e.lineStart = false
				continue
			default:
				out = append(out, '~')
			}
		} else if e.lineStart && b == '~' {
			e.tilde = true
			continue
		}
		out = append(out, b)
		e.lineStart = b == '\r' || b == '\n'
	}
	return out, false
}
