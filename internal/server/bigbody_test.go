package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeTooLargeBodyIsAnswered sends an 8 MB body the way python's
// http.client does (the whole body first, then read the answer) with a
// known length and chunked: the client must be able to send it all and
// then read Ironic's 413 error body, not have its connection reset.
func TestServeTooLargeBodyIsAnswered(t *testing.T) {
	s := serve(t)
	addr := strings.TrimPrefix(s.base, "http://")
	payload := `{"driver": "fake-hardware", "extra": {"x": "` + strings.Repeat("a", 8<<20) + `"}}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%t", chunked), func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(testTimeout))
			head := "POST /v1/nodes HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
				"X-OpenStack-Ironic-API-Version: latest\r\n"
			body := payload
			if chunked {
				head += "Transfer-Encoding: chunked\r\n\r\n"
				body = fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(payload), payload)
			} else {
				head += fmt.Sprintf("Content-Length: %d\r\n\r\n", len(payload))
			}
			if _, err := io.WriteString(conn, head+body); err != nil {
				t.Fatalf("sending the body: %v (the server gave up on the connection before answering)", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			defer resp.Body.Close()
			msg, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "Request body is too large") {
				t.Errorf("answer %d %s", resp.StatusCode, msg)
			}
		})
	}
}
