package ramdisk

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"strings"
)

// DepIndex is a module directory's modules.dep, modules.alias and
// modules.softdep, as modprobe(8) reads them to load a device's driver.
type DepIndex struct {
	rel     map[string]string   // module -> path relative to the directory
	deps    map[string][]string // module -> transitive deps, load last to first
	soft    map[string][]string // module -> softdep pre: modules
	aliases []aliasLine         // in file order
}

type aliasLine struct{ pattern, module string }

// ParseDepIndex parses the three files (softdep may be empty).
func ParseDepIndex(dep, alias, softdep []byte) (*DepIndex, error) {
	x := &DepIndex{rel: map[string]string{}, deps: map[string][]string{}, soft: map[string][]string{}}
	err := eachLine(dep, func(n int, l string) error {
		file, rest, ok := strings.Cut(l, ":")
		if !ok {
			return fmt.Errorf("modules.dep line %d: no colon", n)
		}
		name := moduleKey(file)
		x.rel[name] = file
		for _, d := range strings.Fields(rest) {
			x.deps[name] = append(x.deps[name], moduleKey(d))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(alias, func(n int, l string) error {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "alias" {
			return fmt.Errorf("modules.alias line %d: want \"alias PATTERN MODULE\", got %q", n, l)
		}
		if _, err := path.Match(f[1], ""); err != nil {
			return fmt.Errorf("modules.alias line %d: pattern %q: %w", n, f[1], err)
		}
		x.aliases = append(x.aliases, aliasLine{f[1], CanonicalName(f[2])})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(softdep, func(n int, l string) error {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "softdep" {
			return fmt.Errorf("modules.softdep line %d: want \"softdep MODULE pre: ...\", got %q", n, l)
		}
		x.soft[CanonicalName(f[1])] = parseSoftdepPre(strings.Join(f[2:], " "))
		return nil
	})
	return x, err
}

// eachLine calls fn with every line of b that is neither blank nor a comment.
func eachLine(b []byte, fn func(n int, l string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		if err := fn(n, l); err != nil {
			return err
		}
	}
	return sc.Err()
}

// moduleKey is the module name of a modules.dep path.
func moduleKey(file string) string {
	return CanonicalName(strings.TrimSuffix(path.Base(file), ".ko"))
}

// Match returns the modules (each once, in modules.alias order) with an
// alias pattern matching modalias, as modprobe resolves a device's
// MODALIAS: shell wildcards (*, ?, [...]) over the whole string. Modules
// not in modules.dep are left out (nothing to load).
func (x *DepIndex) Match(modalias string) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range x.aliases {
		if seen[a.module] {
			continue
		}
		if ok, _ := path.Match(a.pattern, modalias); ok {
			if _, known := x.rel[a.module]; known {
				seen[a.module] = true
				out = append(out, a.module)
			}
		}
	}
	return out
}

// Path is module's path relative to the module directory ("" if unknown).
func (x *DepIndex) Path(module string) string { return x.rel[CanonicalName(module)] }

// LoadOrder is what loading module takes, in order: its softdep pre:
// modules (with theirs), its dependencies (modules.dep, last to first), then
// itself; each once.
func (x *DepIndex) LoadOrder(module string) []string {
	var out []string
	seen := map[string]bool{}
	var add func(m string, depth int)
	add = func(m string, depth int) {
		if seen[m] || depth > 8 {
			return
		}
		if _, ok := x.rel[m]; !ok {
			return
		}
		seen[m] = true
		for _, p := range x.soft[m] {
			add(p, depth+1)
		}
		d := x.deps[m]
		for i := len(d) - 1; i >= 0; i-- {
			for _, p := range x.soft[d[i]] {
				add(p, depth+1)
			}
			if !seen[d[i]] {
				seen[d[i]] = true
				out = append(out, d[i])
			}
		}
		out = append(out, m)
	}
	add(CanonicalName(module), 0)
	return out
}
