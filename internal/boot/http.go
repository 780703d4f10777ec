package boot

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// Handler serves the boot endpoint; mount it with the HTTPURL's path
// prefix stripped. GET and HEAD only; Range requests are honoured.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	start := time.Now()
	generic := genericScript(s.httpURL)
	mux.HandleFunc("GET "+scriptPath, func(w http.ResponseWriter, r *http.Request) {
		s.see(model.BootEvent{Service: "http", Remote: r.RemoteAddr, File: scriptPath, Status: "200", Bytes: int64(len(generic))})
		serveScript(w, r, "boot.ipxe", start, generic)
	})
	mux.HandleFunc("GET "+macPrefix+"{mac}", s.serveMAC)
	mux.HandleFunc("GET /n/{token}/{file}", s.serveFile)
	for _, name := range []string{EFIBinary, SNPOnlyBinary, GRUBLoader} {
		mux.HandleFunc("GET /"+name, s.serveLoader(name))
	}
	mux.HandleFunc("GET "+grubPrefix+"{mac}", s.serveGRUB)
	return mux
}

// recordOf reads the {mac} of the request's path and the record published
// for it (nil if none); a malformed MAC is answered 404 and ok is false.
func (s *Service) recordOf(w http.ResponseWriter, r *http.Request) (hw net.HardwareAddr, rec *record, ok bool) {
	hw, err := net.ParseMAC(r.PathValue("mac"))
	if err != nil || len(hw) != 6 {
		http.Error(w, "invalid MAC address", http.StatusNotFound)
		return nil, nil, false
	}
	s.mu.RLock()
	rec = s.byMAC[hw.String()]
	s.mu.RUnlock()
	return hw, rec, true
}

// serveMAC answers {HTTPURL}/mac/aa-bb-cc-dd-ee-ff with the node's script.
func (s *Service) serveMAC(w http.ResponseWriter, r *http.Request) {
	hw, rec, ok := s.recordOf(w, r)
	if !ok {
		return
	}
	ev := model.BootEvent{Service: "http", MAC: hw.String(), Remote: r.RemoteAddr, File: macPrefix + hw.String(), Status: "404"}
	if rec == nil {
		ev.Note = "no boot configuration for this MAC address"
		s.see(ev)
		http.Error(w, "no boot configuration for this MAC address", http.StatusNotFound)
		return
	}
	ev.Node, ev.Status, ev.Bytes = rec.Node, "200", int64(len(rec.script))
	s.see(ev)
	s.log.Debug("serving boot script", "node", rec.Node, "mac", hw.String(), "remote", r.RemoteAddr)
	serveScript(w, r, "boot.ipxe", time.Time{}, rec.script)
}

// serves reports whether name is one of rec's files: kernel and ramdisk of
// a ramdisk boot, boot.iso of a virtual media image.
func serves(rec *record, name string) bool {
	switch {
	case rec.ISO:
		return name == isoFile
	case rec.Local:
		return false
	}
	return name == kernelFile || name == ramdiskFile
}

// serveFile answers {HTTPURL}/n/{token}/kernel, .../ramdisk and .../boot.iso.
func (s *Service) serveFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	s.mu.RLock()
	rec := s.byToken[r.PathValue("token")]
	s.mu.RUnlock()
	if rec == nil || !serves(rec, name) {
		// The token is the node's secret: an unknown one is not recorded.
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	ev := model.BootEvent{Service: "http", Node: rec.Node, Remote: r.RemoteAddr, File: name, Status: "404"}
	f, err := os.Open(filepath.Join(s.nodesDir, rec.Token, name))
	if errors.Is(err, os.ErrNotExist) { // withdrawn or republished meanwhile
		ev.Note = "withdrawn"
		s.see(ev)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err != nil {
		s.log.Error("opening boot file", "node", rec.Node, "file", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		s.log.Error("opening boot file", "node", rec.Node, "file", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if r.Header.Get("Range") == "" {
		s.log.Debug("serving boot file", "node", rec.Node, "file", name, "remote", r.RemoteAddr)
		ev.Status, ev.Bytes = "200", st.Size()
		if r.Method == http.MethodHead {
			ev.Status, ev.Bytes = "200 (HEAD)", 0
		}
		s.see(ev)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, name, st.ModTime(), f)
}

func serveScript(w http.ResponseWriter, r *http.Request, name string, mod time.Time, script []byte) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, name, mod, bytes.NewReader(script))
}

// ScriptURL is the URL of the generic script, what DHCP hands to clients
// already running iPXE.
func (s *Service) ScriptURL() string { return s.httpURL + scriptPath }

// scriptPath is the generic script's path below HTTPURL.
const scriptPath = "/boot.ipxe"
