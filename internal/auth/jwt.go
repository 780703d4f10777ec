package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// JWT strategy name: bearer tokens of an OpenID Connect issuer.
const JWT = "jwt"

// JWTConfig configures the jwt strategy.
type JWTConfig struct {
	// Issuer is the OpenID Connect issuer URL; its discovery document and
	// keys are fetched from it (at start, keys again when they rotate).
	Issuer string
	// Audience is the client ID tokens must be issued for; empty skips the
	// audience check.
	Audience string
	// RolesClaim names the claim listing the user's roles, a dotted path
	// for nested claims (Keycloak: "realm_access.roles"); default "roles".
	RolesClaim string
	// ProjectClaim names the claim of a project-scoped token; default
	// "project_id".
	ProjectClaim string
}

// Roles as Ironic's default policy names them. admin and member may write;
// reader may only read.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleReader = "reader"
)

// jwtAuth verifies bearer tokens and applies the roles.
type jwtAuth struct {
	cfg      JWTConfig
	verifier *oidc.IDTokenVerifier
}

func newJWT(ctx context.Context, cfg JWTConfig) (*jwtAuth, error) {
	if cfg.Issuer == "" {
		return nil, fmt.Errorf("auth strategy jwt needs an issuer (--jwt-issuer)")
	}
	if cfg.RolesClaim == "" {
		cfg.RolesClaim = "roles"
	}
	if cfg.ProjectClaim == "" {
		cfg.ProjectClaim = "project_id"
	}
	p, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer %s: %w", cfg.Issuer, err)
	}
	v := p.Verifier(&oidc.Config{ClientID: cfg.Audience, SkipClientIDCheck: cfg.Audience == ""})
	return &jwtAuth{cfg: cfg, verifier: v}, nil
}

// bearer is the token of "Authorization: Bearer T" or "X-Auth-Token: T"
// (what OpenStack clients send with a token).
func bearer(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get("X-Auth-Token")); t != "" {
		return t
	}
	kind, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if ok && strings.EqualFold(kind, "bearer") {
		return strings.TrimSpace(tok)
	}
	return ""
}

// check returns the principal, or the status and message of the refusal.
// What a principal may do to which node is decided after authentication,
// by the API's route table (internal/api authz.go, internal/policy).
func (j *jwtAuth) check(r *http.Request) (grant, int, string) {
	raw := bearer(r)
	if raw == "" {
		return grant{}, http.StatusUnauthorized, "Authorization required"
	}
	tok, err := j.verifier.Verify(r.Context(), raw)
	if err != nil {
		return grant{}, http.StatusUnauthorized, "Invalid or expired token"
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return grant{}, http.StatusUnauthorized, "Invalid or expired token"
	}
	who := Principal{User: tok.Subject, Roles: stringList(claim(claims, j.cfg.RolesClaim))}
	if name, ok := claims["preferred_username"].(string); ok && name != "" {
		who.User = name
	}
	project, ok := projectClaim(claims, j.cfg.ProjectClaim)
	if !ok {
		return grant{}, http.StatusUnauthorized, fmt.Sprintf("Invalid token: claim %q must be a non-empty string when present", j.cfg.ProjectClaim)
	}
	who.Project = project
	g := grant{who: who, until: tok.Expiry}
	status, msg := refuseRole(who, r.Method, true)
	return g, status, msg
}

// projectClaim reads the project claim strictly: absent (or JSON null) is
// a system-scoped token; a non-empty string is its project; anything else
// (a list, a number, an empty string, an object) is refused (ok false),
// never read as "no project", which would widen the token to system scope.
func projectClaim(claims map[string]any, path string) (project string, ok bool) {
	v := claim(claims, path)
	if v == nil {
		return "", true
	}
	s, isString := v.(string)
	if !isString || strings.TrimSpace(s) == "" {
		return "", false
	}
	return s, true
}

// claim follows a dotted path through nested claims.
func claim(claims map[string]any, path string) any {
	var cur any = claims
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return strings.Fields(strings.ReplaceAll(x, ",", " "))
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
