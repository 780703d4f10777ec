package cli

import (
	"fmt"
	"net/http"

	"github.com/anvil-metal/anvil/internal/tlsconf"
)

// tlsTransport is the transport for --os-cacert, --os-cert/--os-key and
// --insecure, or nil for Go's default (the system's CAs).
func tlsTransport(c tlsconf.Client) (http.RoundTripper, error) {
	if c.IsZero() {
		return nil, nil
	}
	cfg, err := c.Config()
	if err != nil {
		return nil, fmt.Errorf("--os-cacert/--os-cert/--os-key: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return tr, nil
}
