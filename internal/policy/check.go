package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Creds are what a check string reads of the principal (oslo.policy's
// creds): its roles, project and scope.
type Creds struct {
	Roles       []string // with the implied ones (Expand)
	ProjectID   string   // "" for a system-scoped principal
	ProjectName string
	SystemScope string // "all" for a system-scoped principal
}

// Target is what a check string reads of the object acted on, by
// oslo.policy's dotted keys: "node.owner", "node.lessee",
// "runbook.owner", "allocation.owner".
type Target map[string]string

// implied are Keystone's default implied roles.
var implied = map[string]string{"admin": "manager", "manager": "member", "member": "reader"}

// Expand returns roles with the roles they imply, lower-cased, each once.
func Expand(roles []string) []string {
	var out []string
	for _, r := range roles {
		for r = strings.ToLower(r); r != ""; r = implied[r] {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// expr is a parsed check string.
type expr interface {
	eval(e *Enforcer, c Creds, t Target, depth int) bool
}

type (
	constExpr bool
	andExpr   []expr
	orExpr    []expr
	notExpr   struct{ x expr }
	ruleExpr  string
	// genericExpr is kind:match: a role, or a credential compared with a
	// literal or a %(target)s value.
	genericExpr struct{ kind, match string }
)

func (x constExpr) eval(*Enforcer, Creds, Target, int) bool { return bool(x) }

func (x andExpr) eval(e *Enforcer, c Creds, t Target, d int) bool {
	for _, y := range x {
		if !y.eval(e, c, t, d) {
			return false
		}
	}
	return true
}

func (x orExpr) eval(e *Enforcer, c Creds, t Target, d int) bool {
	for _, y := range x {
		if y.eval(e, c, t, d) {
			return true
		}
	}
	return false
}

func (x notExpr) eval(e *Enforcer, c Creds, t Target, d int) bool { return !x.x.eval(e, c, t, d) }

func (x ruleExpr) eval(e *Enforcer, c Creds, t Target, d int) bool {
	r := e.rules[string(x)]
	if r == nil || d > 16 { // an unknown rule, or a loop: nothing
		return false
	}
	return r.eval(e, c, t, d+1)
}

func (x genericExpr) eval(_ *Enforcer, c Creds, t Target, _ int) bool {
	want := x.match
	if key, ok := strings.CutPrefix(want, "%("); ok {
		key, ok = strings.CutSuffix(key, ")s")
		if !ok {
			return false
		}
		if want, ok = t[key]; !ok {
			return false
		}
	}
	if want == "" {
		return false
	}
	switch x.kind {
	case "role":
		return slices.Contains(c.Roles, strings.ToLower(want))
	case "project_id":
		return c.ProjectID != "" && c.ProjectID == want
	case "project_name":
		return c.ProjectName != "" && c.ProjectName == want
	case "system_scope":
		return c.SystemScope != "" && c.SystemScope == want
	}
	return false // a credential Anvil's principals do not carry
}

// parse compiles an oslo.policy check string.
func parse(s string) (expr, error) {
	p := &parser{toks: tokenize(s)}
	if len(p.toks) == 0 {
		return constExpr(true), nil // oslo: an empty rule always passes
	}
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q in %q", p.toks[p.i], s)
	}
	return x, nil
}

// tokenize splits as oslo.policy's _parse_tokenize: on white space, with
// leading "(" and trailing ")" of each word as tokens of their own.
func tokenize(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		clean := strings.TrimLeft(w, "(")
		for range len(w) - len(clean) {
			out = append(out, "(")
		}
		body := strings.TrimRight(clean, ")")
		if body != "" {
			out = append(out, body)
		}
		for range len(clean) - len(body) {
			out = append(out, ")")
		}
	}
	return out
}

type parser struct {
	toks []string
	i    int
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return strings.ToLower(p.toks[p.i])
	}
	return ""
}

func (p *parser) or() (expr, error) {
	var xs orExpr
	for {
		x, err := p.and()
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
		if p.peek() != "or" {
			break
		}
		p.i++
	}
	if len(xs) == 1 {
		return xs[0], nil
	}
	return xs, nil
}

func (p *parser) and() (expr, error) {
	var xs andExpr
	for {
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
		if p.peek() != "and" {
			break
		}
		p.i++
	}
	if len(xs) == 1 {
		return xs[0], nil
	}
	return xs, nil
}

func (p *parser) not() (expr, error) {
	if p.peek() == "not" {
		p.i++
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return notExpr{x}, nil
	}
	return p.atom()
}

func (p *parser) atom() (expr, error) {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("check string ends early")
	}
	tok := p.toks[p.i]
	p.i++
	switch tok {
	case "(":
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.toks) || p.toks[p.i] != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.i++
		return x, nil
	case ")":
		return nil, fmt.Errorf("unexpected )")
	case "@":
		return constExpr(true), nil
	case "!":
		return constExpr(false), nil
	}
	kind, match, ok := strings.Cut(tok, ":")
	if !ok {
		return nil, fmt.Errorf("check %q is not kind:match", tok)
	}
	if len(match) >= 2 && (match[0] == '\'' || match[0] == '"') && match[len(match)-1] == match[0] {
		match = match[1 : len(match)-1]
	}
	if kind == "rule" {
		return ruleExpr(match), nil
	}
	return genericExpr{kind: kind, match: match}, nil
}
