// Package tlsconf is the one place TLS settings from files are read: the
// CA bundle that verifies a server (the CLI's --os-cacert, the agent's
// --ca-file), the client certificate a client presents (--os-cert and
// --os-key, the agent's --cert-file and --key-file) and the CAs a server
// verifies clients with (serve --tls-client-ca-file).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Client describes a TLS client's settings; the zero value is Go's
// default (the system's CAs, no client certificate).
type Client struct {
	CAFile             string // PEM CA bundle that verifies the server
	CertFile, KeyFile  string // PEM client certificate and key, both or neither
	InsecureSkipVerify bool   // do not verify the server (asked for by an operator)
}

// IsZero reports whether c asks for nothing beyond Go's default.
func (c Client) IsZero() bool { return c == Client{} }

// Config builds the tls.Config c describes; errors name the file at fault.
func (c Client) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify} // #nosec G402 -- only when the operator asks for it
	if c.CAFile != "" {
		pool, err := LoadCAs(c.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("a client certificate needs both its certificate and its key file")
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s: %w", c.CertFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// LoadCAs reads a PEM file of CA certificates.
func LoadCAs(file string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}
