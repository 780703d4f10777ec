package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// ContentType is the media type of the stream.
const ContentType = "text/event-stream"

// AppendSSE appends e as one server-sent event: "id: <ID>", "event:
// <Type>", "data: <JSON>" and a blank line. The JSON has no newline.
func AppendSSE(b []byte, e *Event) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, e.ID, 10)
	b = append(b, "\nevent: "...)
	b = append(b, e.Type...)
	b = append(b, "\ndata: "...)
	if e.data != nil {
		b = append(b, e.data...) // see Encode
	} else {
		data, _ := json.Marshal(e)
		b = append(b, data...)
	}
	return append(b, "\n\n"...)
}

// AppendHeartbeat appends a keep-alive: a comment, and the reader's position
// as an event ID with no data, which moves a reader's Last-Event-ID forward
// (past events its filter skipped) without dispatching an event.
func AppendHeartbeat(b []byte, pos uint64) []byte {
	b = append(b, ": heartbeat\nid: "...)
	b = strconv.AppendUint(b, pos, 10)
	return append(b, "\n\n"...)
}

// message is one parsed server-sent event.
type message struct {
	id, event string
	hasID     bool
	data      []byte
}

// sseReader parses a text/event-stream body.
type sseReader struct {
	sc *bufio.Scanner
}

// maxSSELine bounds one line of the stream (an event's JSON).
const maxSSELine = 8 << 20

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	return &sseReader{sc: sc}
}

// next returns the next message (comments skipped), or the read error
// (io.EOF at the end of the stream). A message with an id and no data moves
// the position only.
func (r *sseReader) next() (message, error) {
	var m message
	var data [][]byte
	seen := false
	for r.sc.Scan() {
		line := bytes.TrimSuffix(r.sc.Bytes(), []byte("\r"))
		if len(line) == 0 {
			if !seen {
				continue
			}
			m.data = bytes.Join(data, []byte("\n"))
			return m, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			m.id, m.hasID, seen = string(value), true, true
		case "event":
			m.event, seen = string(value), true
		case "data":
			data = append(data, append([]byte(nil), value...))
			seen = true
		}
	}
	if err := r.sc.Err(); err != nil {
		return message{}, err
	}
	return message{}, io.EOF
}
