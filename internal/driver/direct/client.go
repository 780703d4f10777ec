package direct

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/agent/agentapi"
)

// Client talks to an agent's command API.
type Client struct {
	HTTP *http.Client
}

// NewClient returns a client with a short per-request timeout (commands are
// asynchronous, so no request should take long).
func NewClient() *Client {
	return &Client{HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Start posts a command and returns its accepted state.
func (c *Client) Start(ctx context.Context, agentURL, key, name string, params map[string]any) (agentapi.CommandResult, error) {
	body, _ := json.Marshal(agentapi.CommandRequest{Name: name, Params: params})
	var res agentapi.CommandResult
	err := c.do(ctx, http.MethodPost, strings.TrimRight(agentURL, "/")+"/v1/commands", key, body, &res)
	return res, err
}

// Status reads a command's state.
func (c *Client) Status(ctx context.Context, agentURL, key, id string) (agentapi.CommandResult, error) {
	var res agentapi.CommandResult
	err := c.do(ctx, http.MethodGet, strings.TrimRight(agentURL, "/")+"/v1/commands/"+url.PathEscape(id), key, nil, &res)
	return res, err
}

func (c *Client) do(ctx context.Context, method, u, key string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(agentapi.HeaderToken, key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("agent at %s unreachable: %w", agentURL(u), err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var f struct {
			Fault string `json:"faultstring"`
		}
		_ = json.Unmarshal(b, &f)
		return fmt.Errorf("agent at %s answered HTTP %d: %s", agentURL(u), resp.StatusCode, f.Fault)
	}
	return json.Unmarshal(b, out)
}

// agentURL strips the path from a command URL for messages.
func agentURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Scheme + "://" + p.Host
	}
	return u
}
