package oci_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anvil-metal/anvil/internal/oci"
)

// FuzzParseRef: a reference that parses prints as one that parses to the
// same value, and nothing outside the grammar reaches the registry's URL
// path (no "..", "?", "#", "%", spaces).
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"oci://quay.io/org/img:v1", "oci://127.0.0.1:5000/img", "oci://[::1]:5/a@sha256:" + strings.Repeat("a", 64),
		"oci://r/a__b/c-d.e:t_1", "oci://r/img@sha512:" + strings.Repeat("0", 128), "oci://r/../x", "oci://r/x:%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := oci.ParseRef(s)
		if err != nil {
			return
		}
		again, err := oci.ParseRef(r.String())
		if err != nil || again != r {
			t.Fatalf("%q parsed to %+v, printed %q, reparsed %+v %v", s, r, r.String(), again, err)
		}
		for _, bad := range []string{"..", "?", "#", "%", " ", "\\"} {
			if strings.Contains(r.Repository, bad) || strings.Contains(r.Tag, bad) || strings.Contains(r.Digest, bad) {
				t.Fatalf("%q: %+v holds %q", s, r, bad)
			}
		}
	})
}

// FuzzResolve serves arbitrary bytes as a tag's manifest: Resolve returns
// an error or an image whose blob URL is the registry's, never panics.
func FuzzResolve(f *testing.F) {
	d := strings.Repeat("a", 64)
	for _, s := range []string{
		`{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"sha256:` + d + `","annotations":{"disktype":"raw"},"platform":{"architecture":"amd64"}}]}`,
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json"},"layers":[{"digest":"sha256:` + d + `","mediaType":"application/zstd","size":3}]}`,
		`{"layers":[{"digest":"sha256:../../x"}],"artifactType":"x"}`, `{"manifests":[{}]}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	var body atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		b, _ := body.Load().([]byte)
		if strings.Contains(r.URL.Path, "/manifests/sha256:") {
			// Every sub-manifest is the same bytes: their digest will not
			// match, which Resolve must refuse cleanly.
			w.Write(b)
			return
		}
		w.Write(b)
	}))
	f.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	c := oci.NewClient(oci.Config{HTTP: srv.Client()})
	ref, _ := oci.ParseRef("oci://" + host + "/img:v1")
	f.Fuzz(func(t *testing.T, b []byte) {
		body.Store(b)
		im, err := c.Resolve(context.Background(), ref, "amd64", nil)
		if err != nil {
			return
		}
		if im.URL != "" && !strings.HasPrefix(im.URL, "https://"+host+"/v2/img/blobs/sha") {
			t.Fatalf("blob URL %q", im.URL)
		}
	})
}
