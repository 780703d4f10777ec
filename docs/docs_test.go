package docs_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// TestArchitectureNamesEveryPackage: every Go package under internal/ and
// pkg/ is named, in backquotes, in docs/ARCHITECTURE.md.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := goPackages(t, "internal", "pkg")
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under internal/ and pkg/: %v", len(pkgs), pkgs)
	}
	for _, p := range pkgs {
		if !bytes.Contains(doc, []byte("`"+p+"`")) {
			t.Errorf("docs/ARCHITECTURE.md does not name package `%s`: add a line on its role", p)
		}
	}
}

// goPackages lists the directories under dirs (relative to root, with
// forward slashes) that hold a .go file, skipping testdata.
func goPackages(t *testing.T, dirs ...string) []string {
	t.Helper()
	var pkgs []string
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(e.Name(), ".go") {
				rel, err := filepath.Rel(root, filepath.Dir(path))
				if err != nil {
					return err
				}
				pkgs = append(pkgs, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
}

// TestGoPackagesFindsNested: the walk finds nested packages and skips
// testdata, so the architecture test cannot pass by finding nothing.
func TestGoPackagesFindsNested(t *testing.T) {
	pkgs := goPackages(t, "internal")
	for _, want := range []string{"internal/store/postgres/pgtest", "internal/driver/direct", "internal/fsm"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("goPackages missed %s", want)
		}
	}
	for _, p := range pkgs {
		if strings.Contains(p, "testdata") {
			t.Errorf("goPackages listed %s", p)
		}
	}
}

// readmeMaxLines and readmeFirstScreen bound the README: a front door, with
// the test command where a newcomer sees it.
const (
	readmeMaxLines    = 300
	readmeFirstScreen = 60
)

// TestReadmeIsAFrontDoor: README.md is at most 300 lines and shows the test
// command, `make test`, in a shell block on its first screen.
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move details into docs/", len(lines), readmeMaxLines)
	}
	at := -1
	inCode := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			continue
		}
		if inCode && strings.HasPrefix(strings.TrimSpace(l), "make test") {
			at = i + 1
			break
		}
	}
	switch {
	case at < 0:
		t.Errorf("README.md shows no `make test` in a code block")
	case at > readmeFirstScreen:
		t.Errorf("README.md shows `make test` at line %d, after its first %d lines", at, readmeFirstScreen)
	}
}

// linkRE matches a Markdown link or image target: ](target) or ](target "title").
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestRelativeLinksResolve: every relative link in README.md and docs/*.md
// names an existing file, and an anchor into a Markdown file names one of
// its headings (GitHub's slugs).
func TestRelativeLinksResolve(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	checked := 0
	for _, f := range files {
		for _, l := range links(t, f) {
			if isExternal(l.target) {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(l.target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %q: %v", rel(f), l.line, l.target, err)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !slices.Contains(anchors(t, dest), anchor) {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", rel(f), l.line, l.target, rel(dest), anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the link scanner is broken")
	}
}

func isExternal(target string) bool {
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(target, p) {
			return true
		}
	}
	return false
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

type link struct {
	target string
	line   int
}

// links lists the link targets of a Markdown file outside fenced code
// blocks and inline code spans.
func links(t *testing.T, path string) []link {
	t.Helper()
	var out []link
	eachLine(t, path, func(n int, l string) {
		for _, m := range linkRE.FindAllStringSubmatch(stripCode(l), -1) {
			out = append(out, link{target: m[1], line: n})
		}
	})
	return out
}

// stripCode removes inline code spans from a line.
func stripCode(l string) string {
	parts := strings.Split(l, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
		}
	}
	return b.String()
}

// eachLine calls fn with each line outside fenced code blocks.
func eachLine(t *testing.T, path string, fn func(n int, l string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	inCode := false
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			fn(n, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// anchors lists the anchors GitHub gives a Markdown file's headings.
func anchors(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	seen := map[string]int{}
	eachLine(t, path, func(_ int, l string) {
		if !strings.HasPrefix(l, "#") {
			return
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		s := slug(text)
		if k := seen[s]; k > 0 {
			out = append(out, s+"-"+strconv.Itoa(k))
		} else {
			out = append(out, s)
		}
		seen[s]++
	})
	return out
}

// slug is GitHub's heading anchor: lower case, spaces to hyphens, every
// character but letters, digits, hyphens and underscores dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestSlug pins the anchor rule against headings this documentation uses.
func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"`fake-hardware` knobs", "fake-hardware-knobs"},
		{"Hardware types and their `driver_info`", "hardware-types-and-their-driver_info"},
		{"Runbooks (1.92)", "runbooks-192"},
		{"Traits, portgroups, VIFs and allocations (what Nova and gophercloud use)", "traits-portgroups-vifs-and-allocations-what-nova-and-gophercloud-use"},
		{"SQLite writes (group commit)", "sqlite-writes-group-commit"},
	}
	for _, tt := range tests {
		if got := slug(tt.heading); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

// The house's limits (docs/ARCHITECTURE.md, "Where each kind of change
// goes"): no type declares more than maxMethods methods in non-test code,
// and no interface of internal/api has more than maxAPIInterface. A type
// growing past them wants a service of its own, as the conductor's.
const (
	maxMethods      = 60
	maxAPIInterface = 15
)

func TestMethodSetsStaySmall(t *testing.T) {
	fset := token.NewFileSet()
	methods := map[string]int{} // package dir + "." + receiver type
	var files int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		dir := rel(filepath.Dir(path))
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					methods[dir+"."+receiverName(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				if dir != "internal/api" {
					continue
				}
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if it, ok := ts.Type.(*ast.InterfaceType); ok && it.Methods.NumFields() > maxAPIInterface {
						t.Errorf("interface api.%s has %d entries, over %d", ts.Name.Name, it.Methods.NumFields(), maxAPIInterface)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || len(methods) < 50 {
		t.Fatalf("read %d files, %d receiver types: not the repository", files, len(methods))
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s declares %d methods, over %d", typ, n, maxMethods)
		}
	}
}

// receiverName is the type a method's receiver names (T of *T, T[K]).
func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}
