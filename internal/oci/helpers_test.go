package oci_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func startHandler(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// rewriter changes one byte of every manifest body it passes on.
type rewriter struct {
	http.ResponseWriter
}

func (w *rewriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(`"schemaVersion"`)) {
		b = bytes.Replace(b, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`), 1)
	}
	return w.ResponseWriter.Write(b)
}
