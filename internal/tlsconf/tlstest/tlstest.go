// Package tlstest makes throwaway certificate authorities and the server
// and client certificates they sign, as PEM files in a test's temporary
// directory.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority; File is its certificate as PEM.
type CA struct {
	File string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	next int64
}

// NewCA makes a CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{cert: cert, key: key, next: 2}
	ca.File = writePEM(t, name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Server issues a certificate for 127.0.0.1 and localhost.
func (ca *CA) Server(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	return ca.issue(t, "server", x509.ExtKeyUsageServerAuth)
}

// Client issues a client certificate with common name cn.
func (ca *CA) Client(t testing.TB, cn string) (certFile, keyFile string) {
	t.Helper()
	return ca.issue(t, cn, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(t testing.TB, cn string, usage x509.ExtKeyUsage) (string, string) {
	t.Helper()
	key := newKey(t)
	ca.next++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.next), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, cn+".pem", "CERTIFICATE", der), writePEM(t, cn+"-key.pem", "PRIVATE KEY", kder)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, name, kind string, der []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
