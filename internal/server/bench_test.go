package server

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkServedBesideStalled: GET /v1 while thousands of connections are
// held open by clients (on 100 loopback addresses) that sent half a
// request (stalled) or one request and nothing since (idle keep-alive). The figures show other clients keep
// being served, also beyond the connection cap (4000 held, cap 2048: idle
// ones are evicted for new clients); the timeouts that cut the stalled
// ones are tested in limits_test.go. Measured on 2 cores: 84 µs/op with
// none held, 97 µs with 2000, 173 µs with 4000.
func BenchmarkServedBesideStalled(b *testing.B) {
	for _, held := range []int{0, 2000, 4000} {
		b.Run("held="+strconv.Itoa(held), func(b *testing.B) {
			s := serveWith(b, nil)
			addr := strings.TrimPrefix(s.base, "http://")
			for i := range held {
				// From 100 addresses other than the client's: one address
				// gets only MaxConnectionsPerAddress (256).
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 3, byte(i%100+1))}}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				if i%2 == 0 {
					_, _ = io.WriteString(c, "POST /v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{") // stalled body
				} else {
					_, _ = io.WriteString(c, "GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") // then idle
				}
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			b.ResetTimer()
			for b.Loop() {
				resp, err := client.Get(s.base + "/v1")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}
