package oci

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/tlsconf"
)

// HTTPClient is the registries' client for Ironic's [oci]verify_ca: a
// boolean (oslo's spelling: "" and true verify with the system's roots,
// false not at all) or the path of a CA bundle.
func HTTPClient(verifyCA string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // loopback and operator-named registries only; no environment proxies
	if verifyCA != "" {
		if b, ok := pyrepr.BoolFromString(verifyCA); ok {
			if !b {
				tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the operator's [oci]verify_ca=false
			}
		} else {
			pool, err := tlsconf.LoadCAs(verifyCA)
			if err != nil {
				return nil, fmt.Errorf("oci verify_ca: %w", err)
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}, nil
}
