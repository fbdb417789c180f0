package workspace

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// match is one file a glob found: its path as shown ("/"-separated, through
// the links the pattern named) and its resolved workspace-relative path.
type match struct {
	shown, rel string
}

// Glob returns the files matching pattern (see the package documentation
// for the syntax), as "/"-separated paths relative to the workspace, sorted.
// A pattern that leads outside the workspace is an error matching
// [ErrEscape]; a malformed one is a retry error.
func (f *FS) Glob(pattern string) ([]string, error) {
	ms, err := f.glob(pattern)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.shown
	}
	return out, nil
}

func hasMeta(seg string) bool { return strings.ContainsAny(seg, `*?[\`) }

func (f *FS) glob(pattern string) ([]match, error) {
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, retry(nil, "invalid pattern %q: it contains a NUL byte", pattern)
	}
	if pattern == "" {
		return nil, retry(nil, "the pattern is empty")
	}
	p := path.Clean(filepath.ToSlash(pattern))
	if path.IsAbs(pattern) || filepath.IsAbs(pattern) || p == ".." || strings.HasPrefix(p, "../") {
		return nil, escapes(pattern)
	}
	var segs []string
	for s := range strings.SplitSeq(p, "/") {
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue // "**/**" is "**"
		}
		segs = append(segs, s)
	}
	for _, s := range segs {
		if _, err := path.Match(s, ""); err != nil {
			return nil, retry(nil, "invalid pattern %q: %v", pattern, err)
		}
	}
	// The literal leading segments name one directory (or file): resolve
	// them once, links included.
	i := 0
	for i < len(segs) && !hasMeta(segs[i]) {
		i++
	}
	g := &globber{f: f, found: map[string]match{}}
	if i == len(segs) {
		rel, err := f.rel(filepath.FromSlash(p))
		if err != nil {
			return nil, named(err, pattern)
		}
		if r, ok := f.isFile(rel); ok {
			g.add(p, r)
		}
	} else {
		shown, base := "", "."
		if i > 0 {
			shown = path.Join(segs[:i]...)
			var err error
			if base, err = f.rel(filepath.FromSlash(shown)); err != nil {
				return nil, named(err, pattern)
			}
		}
		if f.statDir(base) {
			g.walk(shown, base, segs[i:])
		}
	}
	out := make([]match, 0, len(g.found))
	for _, m := range g.found {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].shown < out[j].shown })
	return out, nil
}

// named returns err naming pattern when it is an escape.
func named(err error, pattern string) error {
	if errors.Is(err, ErrEscape) {
		return escapes(pattern)
	}
	return err
}

// globber walks directories for one pattern.
type globber struct {
	f     *FS
	found map[string]match // by shown path: "**" can reach a file twice
}

func (g *globber) add(shown, rel string) { g.found[shown] = match{shown: shown, rel: rel} }

// walk matches segs against the directory rel (link-free), shown as shown.
func (g *globber) walk(shown, rel string, segs []string) {
	des, err := g.readDir(rel)
	if err != nil {
		return
	}
	seg, last := segs[0], len(segs) == 1
	if seg == "**" {
		if last {
			g.everyFile(shown, rel, des)
			return
		}
		g.walk(shown, rel, segs[1:]) // no directory at all
		for _, de := range des {
			if de.IsDir() { // a real directory: links are not followed
				g.walk(path.Join(shown, de.Name()), filepath.Join(rel, de.Name()), segs)
			}
		}
		return
	}
	for _, de := range des {
		if ok, _ := path.Match(seg, de.Name()); !ok {
			continue
		}
		s, r := path.Join(shown, de.Name()), filepath.Join(rel, de.Name())
		if last {
			if target, ok := g.f.isFile(r); ok {
				g.add(s, target)
			}
			continue
		}
		if de.Type()&fs.ModeSymlink != 0 {
			// A link named by a one-level segment is followed once.
			if r, err = g.f.rel(r); err != nil || !g.f.statDir(r) {
				continue
			}
		} else if !de.IsDir() {
			continue
		}
		g.walk(s, r, segs[1:])
	}
}

// everyFile adds every file below rel (whose entries are des).
func (g *globber) everyFile(shown, rel string, des []fs.DirEntry) {
	for _, de := range des {
		s, r := path.Join(shown, de.Name()), filepath.Join(rel, de.Name())
		if de.IsDir() {
			if sub, err := g.readDir(r); err == nil {
				g.everyFile(s, r, sub)
			}
			continue
		}
		if target, ok := g.f.isFile(r); ok {
			g.add(s, target)
		}
	}
}

func (g *globber) readDir(rel string) ([]fs.DirEntry, error) {
	d, err := g.f.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}
