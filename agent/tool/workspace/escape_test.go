package workspace_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool/workspace"
)

// tree builds, under base, a workspace "ws" and a directory "outside"
// holding TOPSECRET.txt, with symbolic links of every kind in the
// workspace. It returns the opened workspace.
func tree(t testing.TB, base string) (*workspace.FS, string) {
	t.Helper()
	dir := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	mustWrite(t, filepath.Join(outside, "TOPSECRET.txt"), "SECRET\n")
	mustWrite(t, filepath.Join(outside, "leak.png"), "SECRETPNG")
	mustWrite(t, filepath.Join(dir, "sub", "deep", "file.txt"), "inside\n")
	mustWrite(t, filepath.Join(dir, "top.txt"), "top\n")
	for link, target := range map[string]string{
		"in":          "sub",                                       // inside, relative
		"sub/deep/up": "../../top.txt",                             // inside, climbing
		"absin":       filepath.Join(dir, "sub"),                   // inside, absolute
		"chain":       "in/deep/up",                                // inside, through links
		"selfdir":     ".",                                         // the workspace itself
		"out":         filepath.Join(outside, "TOPSECRET.txt"),     // outside file, absolute
		"outdir":      "../outside",                                // outside directory, relative
		"sub/esc":     "../../outside",                             // outside, from below
		"via":         "outdir/TOPSECRET.txt",                      // outside through a link
		"ghost":       filepath.Join(outside, "created-later.txt"), // dangling, outside
		"ghostdir":    filepath.Join(outside, "later"),             // dangling directory, outside
		"loop":        "loop",                                      // a loop
		"pingpong":    "pong",                                      // a longer loop
		"pong":        "pingpong",                                  //
		"root":        "/",                                         // the file system root
	} {
		mustSymlink(t, target, filepath.Join(dir, link))
	}
	f, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, outside
}

func TestResolve(t *testing.T) {
	f, _ := tree(t, t.TempDir())
	dir := f.Dir()
	for _, c := range []struct{ name, want string }{
		{"", ""},
		{".", ""},
		{"./", ""},
		{"top.txt", "top.txt"},
		{"a/../top.txt", "top.txt"},
		{"new/dir/file.txt", "new/dir/file.txt"}, // missing: as is
		{"in", "sub"},
		{"in/deep/file.txt", "sub/deep/file.txt"},
		{"in/new.txt", "sub/new.txt"},
		{"sub/deep/up", "top.txt"},
		{"chain", "top.txt"},
		{"absin/deep", "sub/deep"},
		{"selfdir/selfdir/top.txt", "top.txt"},
		{"top.txt/below", "top.txt/below"}, // below a file: as is, reading it fails
	} {
		got, err := f.Resolve(c.name)
		if err != nil || got != filepath.Join(dir, c.want) {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.name, got, err, filepath.Join(dir, c.want))
		}
	}
	for _, name := range []string{
		"..", "../x", "../ws/top.txt", "/etc/passwd", "/", "a/../../x", "sub/../../x",
		"out", "outdir", "outdir/TOPSECRET.txt", "sub/esc", "sub/esc/TOPSECRET.txt", "in/esc/x",
		"via", "ghost", "ghostdir/x", "root", "root/etc/passwd", "absin/../../x",
	} {
		_, err := f.Resolve(name)
		if err == nil {
			t.Errorf("Resolve(%q) succeeded", name)
			continue
		}
		var re *llm.RetryError
		if !errors.Is(err, workspace.ErrEscape) || !errors.As(err, &re) || err.Error() != "path escapes workspace root: "+name {
			t.Errorf("Resolve(%q): %v", name, err)
		}
	}
	for _, name := range []string{"loop", "pingpong/x"} {
		if _, err := f.Resolve(name); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
			t.Errorf("Resolve(%q): %v", name, err)
		}
	}
	if _, err := f.Resolve("a\x00b"); err == nil || !strings.Contains(err.Error(), "NUL byte") {
		t.Errorf("NUL: %v", err)
	}
}

// TestEscapes tries every escape through every tool, and checks nothing
// outside the workspace was read, listed or written.
func TestEscapes(t *testing.T) {
	w := newWS(t, nil)
	w.file("sub/file.txt", "inside\n")
	w.link(filepath.Join(w.outside, "TOPSECRET.txt"), "out.txt")
	w.link(w.outside, "outdir")
	w.link("../../outside", "sub/esc")
	w.link(filepath.Join(w.outside, "created-later.txt"), "ghost.txt")
	w.link("sub", "in")
	w.link("file.txt", "sub/alias.txt")
	rel, err := filepath.Rel(w.dir, filepath.Join(w.outside, "TOPSECRET.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"../x", "/etc/passwd", "a/../../x", rel, filepath.Join(w.outside, "TOPSECRET.txt"),
		"out.txt", "outdir/TOPSECRET.txt", "sub/esc/TOPSECRET.txt", "in/esc/TOPSECRET.txt", "ghost.txt",
	} {
		want := "path escapes workspace root: " + path
		w.retry(workspace.ReadTool, jsonArgs("path", path), want)
		w.retry(workspace.WriteTool, jsonArgs("path", path, "content", "pwned"), want)
		w.retry(workspace.WriteTool, jsonArgs("path", path+"/new.txt", "content", "pwned"), want+"/new.txt")
		w.retry(workspace.ListTool, jsonArgs("path", path), want)
	}
	// A link inside that stays inside works, for reading and writing.
	if got := w.ok(workspace.ReadTool, `{"path":"in/alias.txt"}`); got != "1     inside" {
		t.Errorf("read through inside links: %q", got)
	}
	w.ok(workspace.WriteTool, jsonArgs("path", "in/alias.txt", "content", "changed\n"))
	if got := w.read("sub/file.txt"); got != "changed\n" {
		t.Errorf("write through inside links: %q", got)
	}
	w.ok(workspace.WriteTool, jsonArgs("path", "in/made/new.txt", "content", "n"))
	if got := w.read("sub/made/new.txt"); got != "n" {
		t.Errorf("write below an inside link: %q", got)
	}
	// A directory created later as a link to outside is refused too.
	w.ok(workspace.WriteTool, jsonArgs("path", "later/x.txt", "content", "1"))
	if err := os.RemoveAll(filepath.Join(w.dir, "later")); err != nil {
		t.Fatal(err)
	}
	w.link(w.outside, "later")
	w.retry(workspace.WriteTool, jsonArgs("path", "later/x.txt", "content", "2"), "path escapes workspace root: later/x.txt")
	w.retry(workspace.ReadTool, jsonArgs("path", "later/TOPSECRET.txt"), "path escapes workspace root: later/TOPSECRET.txt")

	// Nothing outside changed.
	entries, err := os.ReadDir(w.outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != "TOPSECRET.txt,secret.png" {
		t.Errorf("outside now holds %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(w.outside, "TOPSECRET.txt")); string(b) != "SECRET\n" {
		t.Errorf("outside file changed: %q", b)
	}
	// And nothing outside shows in listings or globs.
	for _, out := range []string{
		w.ok(workspace.ListTool, `{"depth":0}`),
		w.ok(workspace.GlobTool, `{"pattern":"**"}`),
		w.ok(workspace.GlobTool, `{"pattern":"*/*"}`),
		w.ok(workspace.GlobTool, `{"pattern":"*/*/*"}`),
	} {
		if strings.Contains(out, "TOPSECRET") || strings.Contains(out, "secret.png") {
			t.Errorf("outside shows:\n%s", out)
		}
	}
}

// FuzzResolve checks that no path resolves outside the workspace and that
// no read, listing or glob reveals the file outside it.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"", ".", "top.txt", "../x", "/etc/passwd", "a/../../x", "in/deep/file.txt", "out", "outdir/TOPSECRET.txt",
		"sub/esc/TOPSECRET.txt", "via", "chain", "absin/../..", "selfdir/../outside", "loop", "root/etc", "a\x00b",
		"**", "*/*", "sub/*/*", "in/../../outside/*", "//x", "./../ws/top.txt", "sub/deep/up/../x",
		"outdir/leak.png", "**/*.png", "*/*.png", "sub/esc/*.png",
	} {
		f.Add(s)
	}
	fsys, _ := tree(f, f.TempDir())
	dir := fsys.Dir()
	f.Fuzz(func(t *testing.T, name string) {
		got, err := fsys.Resolve(name)
		if err == nil {
			if got != dir && !strings.HasPrefix(got, dir+string(filepath.Separator)) {
				t.Fatalf("Resolve(%q) = %q, outside %q", name, got, dir)
			}
			// Its deepest existing ancestor really is inside.
			p := got
			for {
				if real, err := filepath.EvalSymlinks(p); err == nil {
					if real != dir && !strings.HasPrefix(real, dir+string(filepath.Separator)) {
						t.Fatalf("Resolve(%q) = %q, which is really %q", name, got, real)
					}
					break
				}
				p = filepath.Dir(p)
			}
		}
		if b, err := fsys.ReadFile(name); err == nil && bytes.Contains(b, []byte("SECRET")) {
			t.Fatalf("ReadFile(%q) read the secret", name)
		}
		if s, err := fsys.List(name, 0); err == nil && strings.Contains(s, "TOPSECRET") {
			t.Fatalf("List(%q) shows the secret", name)
		}
		if paths, err := fsys.Glob(name); err == nil && strings.Contains(strings.Join(paths, "\n"), "TOPSECRET") {
			t.Fatalf("Glob(%q) = %v", name, paths)
		}
		for _, p := range fsys.ExpandMediaRefs("!!" + name) {
			if p.ImageURL != "" { // the only image is outside
				t.Fatalf("ExpandMediaRefs(!!%q) = %+v", name, p)
			}
		}
	})
}
