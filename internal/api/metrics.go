package api

import "net/http"

// Route names the route pattern s serves r with, such as
// "/v1/nodes/{ident}": a label that stays the same for every node, for
// request metrics. Paths no route takes answer "/" (the not-found handler).
func (s *Server) Route(r *http.Request) string {
	_, pattern := s.mux.Handler(withV1Prefix(r))
	return pattern
}
