package ramdisk

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Tree is a kernel's module tree (lib/modules/<release> of a linux-image
// package, or any directory holding .ko files) indexed by module name.
type Tree struct {
	Dir   string
	paths map[string]string // canonical name -> path relative to Dir
}

// OpenTree indexes the .ko files under dir.
func OpenTree(dir string) (*Tree, error) {
	t := &Tree{Dir: dir, paths: map[string]string{}}
	compressed := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if n, ok := strings.CutSuffix(d.Name(), ".ko"); ok {
			rel, _ := filepath.Rel(dir, p)
			t.paths[CanonicalName(n)] = filepath.ToSlash(rel)
		} else if n, _, ok := strings.Cut(d.Name(), ".ko."); ok {
			compressed[CanonicalName(n)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("modules under %s: %w", dir, err)
	}
	if len(t.paths) == 0 && len(compressed) > 0 {
		return nil, fmt.Errorf("the modules under %s are compressed; give uncompressed .ko files", dir)
	}
	return t, nil
}

// Has reports whether the tree holds the named module.
func (t *Tree) Has(name string) bool { return t.paths[CanonicalName(name)] != "" }

// Module is a module picked from a Tree.
type Module struct {
	ModInfo
	Rel  string // path relative to the tree, kept in the initramfs
	Path string // path on this machine
	Size int64
}

// Resolve returns the named modules and everything they depend on (depends
// and softdep pre: modules present in the tree), each once, in an order in
// which they can be loaded: a module after its dependencies.
func (t *Tree) Resolve(names []string) ([]Module, error) {
	var out []Module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, from string, soft bool) error
	visit = func(name, from string, soft bool) error {
		name = CanonicalName(name)
		switch state[name] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("module %s: dependency cycle through %s", from, name)
		}
		rel, ok := t.paths[name]
		if !ok {
			if soft {
				return nil
			}
			if from != "" {
				return fmt.Errorf("module %s (needed by %s) not found under %s", name, from, t.Dir)
			}
			return fmt.Errorf("module %s not found under %s", name, t.Dir)
		}
		state[name] = 1
		p := filepath.Join(t.Dir, filepath.FromSlash(rel))
		mi, err := ReadModInfo(p)
		if err != nil {
			return err
		}
		mi.Name = name
		for _, d := range mi.SoftPre {
			if err := visit(d, name, true); err != nil {
				return err
			}
		}
		for _, d := range mi.Depends {
			if err := visit(d, name, false); err != nil {
				return err
			}
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		state[name] = 2
		out = append(out, Module{ModInfo: mi, Rel: rel, Path: p, Size: st.Size()})
		return nil
	}
	for _, n := range names {
		if err := visit(n, "", false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Release is the kernel release the modules were built for (their
// vermagic); modules of different releases are refused.
func Release(mods []Module) (string, error) {
	rel := ""
	for _, m := range mods {
		switch {
		case m.Version == "":
			return "", fmt.Errorf("module %s has no vermagic", m.Name)
		case rel == "":
			rel = m.Version
		case m.Version != rel:
			return "", fmt.Errorf("module %s is built for %s, others for %s", m.Name, m.Version, rel)
		}
	}
	return rel, nil
}

// DepFiles are the modules.dep, modules.alias and modules.softdep files
// depmod(8) would write for mods alone (paths relative to the module
// directory): modules.dep lists every module's transitive dependencies, to
// be loaded last to first, as modprobe reads it.
func DepFiles(mods []Module) (dep, alias, softdep []byte) {
	byName := map[string]Module{}
	for _, m := range mods {
		byName[m.Name] = m
	}
	var d, a, s bytes.Buffer
	a.WriteString("# Aliases extracted from modules themselves.\n")
	s.WriteString("# Soft dependencies extracted from modules themselves.\n")
	for _, m := range mods {
		// the transitive dependencies in load order, then reversed
		var order []string
		seen := map[string]bool{}
		var walk func(n string)
		walk = func(n string) {
			for _, x := range byName[n].Depends {
				if !seen[x] {
					seen[x] = true
					walk(x)
					order = append(order, x)
				}
			}
		}
		walk(m.Name)
		d.WriteString(m.Rel + ":")
		for i := len(order) - 1; i >= 0; i-- {
			d.WriteString(" " + byName[order[i]].Rel)
		}
		d.WriteString("\n")
		for _, p := range m.Aliases {
			fmt.Fprintf(&a, "alias %s %s\n", p, m.Name)
		}
		var pre []string
		for _, p := range m.SoftPre {
			if _, ok := byName[p]; ok {
				pre = append(pre, p)
			}
		}
		if len(pre) > 0 {
			fmt.Fprintf(&s, "softdep %s pre: %s\n", m.Name, strings.Join(pre, " "))
		}
	}
	return d.Bytes(), a.Bytes(), s.Bytes()
}
