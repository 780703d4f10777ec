package direct

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// Client talks to an agent's command API (IPA's, internal/ipa).
type Client struct {
	HTTP *http.Client

	mu   sync.Mutex
	byCA map[string]*Client // per agent_verify_ca (verifying)
}

// NewClient returns a client with a short per-request timeout (commands are
// asynchronous, so no request should take long).
func NewClient() *Client {
	return &Client{HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// verifying returns the client to reach an agent whose https callback_url
// is verified with the PEM certificate ca (the heartbeat's
// agent_verify_ca, IPA's auto TLS), as Ironic's agent client verifies
// with the certificate it stored; with no ca, c itself (system roots).
// Clients are kept per certificate, so connections are reused.
func (c *Client) verifying(ca string) (*Client, error) {
	if ca == "" {
		return c, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.byCA[ca]; ok {
		return v, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ca)) {
		return nil, errors.New("the agent's agent_verify_ca holds no PEM certificate")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	v := &Client{HTTP: &http.Client{Timeout: c.HTTP.Timeout, Transport: tr}}
	if c.byCA == nil {
		c.byCA = map[string]*Client{}
	}
	if len(c.byCA) >= maxAgentCAs { // one per booted agent: forget the oldest generation
		for k, old := range c.byCA {
			old.HTTP.CloseIdleConnections()
			delete(c.byCA, k)
		}
	}
	c.byCA[ca] = v
	return v, nil
}

// maxAgentCAs bounds the clients kept per agent certificate.
const maxAgentCAs = 256

// ErrBusy is the agent's 409: another command is still running.
var ErrBusy = errors.New("the agent is busy with another command")

// Run posts a command: POST /v1/commands/?wait=<wait>&agent_token=<token>.
// A synchronous command (or wait) answers its outcome; an asynchronous one
// RUNNING, to be polled with Status.
func (c *Client) Run(ctx context.Context, agentURL, token, name string, params map[string]any, wait bool) (ipa.CommandResult, error) {
	if params == nil {
		params = map[string]any{}
	}
	body, _ := json.Marshal(ipa.CommandRequest{Name: name, Params: params})
	q := url.Values{ipa.QueryWait: {fmt.Sprint(wait)}, ipa.QueryToken: {token}}
	var res ipa.CommandResult
	err := c.do(ctx, http.MethodPost, strings.TrimRight(agentURL, "/")+ipa.CommandsPath, q, body, &res)
	return res, err
}

// Status reads a command's state: GET /v1/commands/{id}.
func (c *Client) Status(ctx context.Context, agentURL, token, id string) (ipa.CommandResult, error) {
	var res ipa.CommandResult
	err := c.do(ctx, http.MethodGet, strings.TrimRight(agentURL, "/")+ipa.CommandsPath+url.PathEscape(id),
		url.Values{ipa.QueryToken: {token}}, nil, &res)
	return res, err
}

// List reads every command, oldest first: GET /v1/commands/.
func (c *Client) List(ctx context.Context, agentURL, token string) ([]ipa.CommandResult, error) {
	var res ipa.CommandList
	err := c.do(ctx, http.MethodGet, strings.TrimRight(agentURL, "/")+ipa.CommandsPath,
		url.Values{ipa.QueryToken: {token}}, nil, &res)
	return res.Commands, err
}

// do sends one request. The token travels in the query, as IPA reads it;
// no error text carries the query (the *url.Error of a failed request
// would), only the agent's address.
func (c *Client) do(ctx context.Context, method, u string, q url.Values, body []byte, out any) error {
	where := ipa.RedactURL(u)
	req, err := http.NewRequestWithContext(ctx, method, u+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("agent at %s: bad URL", where)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("agent at %s unreachable: %w", agentBase(where), err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		var f ipa.Fault
		_ = json.Unmarshal(b, &f)
		if resp.StatusCode == http.StatusConflict {
			return fmt.Errorf("%w (%s)", ErrBusy, f.String)
		}
		return fmt.Errorf("agent at %s answered HTTP %d: %s", agentBase(where), resp.StatusCode, f.String)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("agent at %s answered malformed JSON: %w", agentBase(where), err)
	}
	return nil
}

// agentBase strips the path from a command URL for messages.
func agentBase(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Scheme + "://" + p.Host
	}
	return u
}
