// Package auth authenticates API requests as Ironic's auth strategies do.
//
// Strategies (Ironic's [DEFAULT]auth_strategy names): "noauth" lets every
// request through; "http_basic" checks HTTP Basic credentials against an
// Apache htpasswd file of bcrypt entries (Ironic's
// http_basic_auth_user_file), answering 401 with
// `WWW-Authenticate: Basic realm="Baremetal API"` and Ironic's
// {"error": {"message", "code"}} body; "jwt" verifies bearer tokens
// (Authorization: Bearer, or X-Auth-Token as OpenStack clients send) of an
// OpenID Connect issuer with coreos/go-oidc and maps a roles claim to
// Ironic's roles: admin and member may write, reader may only read (403).
// A token with a project claim yields a project-scoped Principal; which
// nodes it may see and change (owner, lessee) is decided by the API's
// routes (internal/api authz.go) with internal/policy's rules.
//
// Invariants:
//   - public routes (the root document, /v1, and the agent's lookup,
//     heartbeat and continue_inspection, which are guarded by the agent
//     token instead) are never asked for credentials, as in Ironic's
//     acl_public_routes; everything else is, /metrics and the event stream
//     included;
//   - the user file is re-read when it changes, so users are added or
//     removed without a restart; only bcrypt entries are accepted, and a
//     file with another digest is refused at start;
//   - with Config.SessionPath set, a browser logs in there once and
//     presents a session cookie instead of credentials (sessions.go):
//     HttpOnly, SameSite=Strict, bounded life, writes need its CSRF token;
//     a script's request (Sec-Fetch-Mode other than navigate) gets no Basic
//     challenge, so no browser dialog pops over the dashboard;
//   - a browser's write from another site's page (Sec-Fetch-Site
//     cross-site or same-site) is refused whatever credentials the browser
//     adds by itself;
//   - passwords are never logged; a bcrypt match is cached by a hash of
//     the credentials, so a CLI issuing many requests pays bcrypt once
//     (failures are cached apart, so wrong guesses cannot evict the
//     matches, and a repeated wrong credential costs no bcrypt);
//   - failed http_basic attempts are counted per user and address, per
//     address and per user in a window (throttle.go); past a limit the
//     attempts it covers are answered 429 without bcrypt until the window
//     ends, while cached matches still pass; bcrypt runs on at most half
//     the cores at once, so cached checks never wait behind it.
package auth
