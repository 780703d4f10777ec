// Package authtest is a local OpenID Connect issuer for tests: discovery
// and JWKS served on loopback, and tokens signed with its key.
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running issuer.
type Issuer struct {
	URL string
	Key *rsa.PrivateKey
}

// NewIssuer starts an issuer that lives as long as the test.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &Issuer{Key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss.URL, "jwks_uri": iss.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	// The URL is known before the server answers anything: handlers read
	// it, and a client in another process gives the race detector no
	// happens-before edge with a later write.
	srv := httptest.NewUnstartedServer(mux)
	iss.URL = "http://" + srv.Listener.Addr().String()
	srv.Start()
	t.Cleanup(srv.Close)
	return iss
}

// Token signs claims with key (iss, aud "anvil", sub, exp and iat filled
// in unless given).
func (iss *Issuer) Token(t testing.TB, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	full := map[string]any{"iss": iss.URL, "aud": "anvil", "sub": "u-1", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for k, v := range claims {
		full[k] = v
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(full).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
