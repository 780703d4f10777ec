package api

import "net/http"

// Route names the route pattern h serves r with, such as
// "/v1/nodes/{ident}": a label that stays the same for every node, for
// request metrics. Paths no route takes answer "/" (the not-found handler);
// h not built by New answers "".
func Route(h http.Handler, r *http.Request) string {
	s, ok := h.(*Server)
	if !ok {
		return ""
	}
	_, pattern := s.mux.Handler(withV1Prefix(r))
	return pattern
}
