package workspace_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/tool/workspace"
)

func numbered(from, to int) string {
	var lines []string
	for i := from; i <= to; i++ {
		lines = append(lines, fmt.Sprintf("%-6dline %d", i, i))
	}
	return strings.Join(lines, "\n")
}

func TestRead(t *testing.T) {
	w := newWS(t, nil)
	var ten, big strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&ten, "line %d\n", i)
	}
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	w.file("ten.txt", ten.String())
	w.file("big.txt", big.String())
	w.file("abc.txt", "a\nb\nc\n")
	w.file("nonl.txt", "a\n  b")
	w.file("crlf.txt", "one\r\ntwo\r\n")
	w.file("empty.txt", "")
	w.file("blank.txt", "\n\n")
	w.file("docs/x.md", "# x\n")
	for _, c := range []struct{ args, want string }{
		{`{"path":"abc.txt"}`, "1     a\n2     b\n3     c"},
		{`{"path":"nonl.txt"}`, "1     a\n2       b"},
		{`{"path":"crlf.txt"}`, "1     one\n2     two"},
		{`{"path":"empty.txt"}`, "(empty file)"},
		{`{"path":"blank.txt"}`, "1     \n2     "},
		{`{"path":"./docs//x.md"}`, "1     # x"},
		{`{"path":"ten.txt"}`, numbered(1, 10)},
		{`{"path":"ten.txt","offset":3,"limit":2}`, numbered(3, 4) + "\n[... truncated: 10 lines total, showing 3-4 ...]"},
		{`{"path":"ten.txt","offset":9,"limit":5}`, numbered(9, 10)},
		{`{"path":"ten.txt","offset":10}`, numbered(10, 10)},
		{`{"path":"ten.txt","limit":10}`, numbered(1, 10)},
		{`{"path":"ten.txt","limit":9}`, numbered(1, 9) + "\n[... truncated: 10 lines total, showing 1-9 ...]"},
		{`{"path":"big.txt"}`, numbered(1, 2000) + "\n[... truncated: 2500 lines total, showing 1-2000 ...]"},
		{`{"path":"big.txt","offset":2001}`, numbered(2001, 2500)},
	} {
		if got := w.ok(workspace.ReadTool, c.args); got != c.want {
			if len(got) > 300 {
				got = got[len(got)-300:]
			}
			t.Errorf("read %s = %q\nwant %q", c.args, got, c.want[max(0, len(c.want)-300):])
		}
	}
	err := w.retry(workspace.ReadTool, `{"path":"nope.txt"}`, "File not found: nope.txt")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v does not match fs.ErrNotExist", err)
	}
	w.retry(workspace.ReadTool, `{"path":"abc.txt/x"}`, "File not found: abc.txt/x")
	w.retry(workspace.ReadTool, `{"path":"docs"}`, "docs is a directory")
	w.retry(workspace.ReadTool, `{"path":""}`, "is a directory")
	w.retry(workspace.ReadTool, `{"path":"ten.txt","offset":11}`, "offset 11 is past the end of ten.txt (10 lines)")
	w.retry(workspace.ReadTool, `{"path":"ten.txt","offset":-1}`, "offset must be 1 or more")
	w.retry(workspace.ReadTool, `{"path":"ten.txt","limit":-1}`, "limit must be 1 or more")
	w.retry(workspace.ReadTool, `{"path":"ten.txt","offset":"x"}`, "invalid arguments")
	w.retry(workspace.ReadTool, `{}`, "invalid arguments")
	w.retry(workspace.ReadTool, `{"path":"missing.pdf"}`, "File not found: missing.pdf")
	if got := w.ok(workspace.ReadTool, `{"path":"ten.txt","offset":10,"limit":9223372036854775807}`); got != numbered(10, 10) {
		t.Errorf("huge limit: %q", got)
	}
}

func TestReadUnsupported(t *testing.T) {
	w := newWS(t, nil)
	for _, name := range []string{"c.xlsx", "d.xls", "e.pptx", "f.msg", "g.epub", "h.png", "i.jpeg", "bin.dat"} {
		w.file(name, "PK\x00\x03 binary")
		err := w.retry(workspace.ReadTool, jsonArgs("path", name), "Unsupported format: "+name)
		if !errors.Is(err, workspace.ErrUnsupported) {
			t.Errorf("%s: %v does not match ErrUnsupported", name, err)
		}
	}
}

func TestSizeLimit(t *testing.T) {
	w := newWS(t, &workspace.Card{MaxFileBytes: 10})
	w.file("small.txt", "0123456789")
	w.file("big.txt", "0123456789A")
	if got := w.ok(workspace.ReadTool, `{"path":"small.txt"}`); got != "1     0123456789" {
		t.Errorf("small: %q", got)
	}
	err := w.retry(workspace.ReadTool, `{"path":"big.txt"}`, "File too large: big.txt (11 bytes; the limit is 10 bytes)")
	if !errors.Is(err, workspace.ErrTooLarge) {
		t.Errorf("%v does not match ErrTooLarge", err)
	}
	w.retry(workspace.WriteTool, jsonArgs("path", "w.txt", "content", "0123456789A"), "File too large: w.txt")
	// CRLF conversion can push content over the limit.
	w.file("crlf.txt", "a\r\n")
	w.retry(workspace.WriteTool, jsonArgs("path", "crlf.txt", "content", "1\n2\n3\n4\n5\n"), "File too large: crlf.txt")
	if got := w.read("crlf.txt"); got != "a\r\n" {
		t.Errorf("crlf.txt changed to %q", got)
	}
}

func TestWrite(t *testing.T) {
	w := newWS(t, nil)
	if got := w.ok(workspace.WriteTool, jsonArgs("path", "a/b/c.txt", "content", "hello\n")); got != "Written: a/b/c.txt" {
		t.Fatalf("write: %q", got)
	}
	if got := w.read("a/b/c.txt"); got != "hello\n" {
		t.Fatalf("content %q", got)
	}
	w.file("crlf.txt", "x\r\ny\r\n")
	w.file("lf.txt", "x\ny\n")
	w.file("oneline.txt", "x")
	w.file("bin.dat", "a\x00\r\nb")
	for _, c := range []struct{ name, content, want string }{
		{"crlf.txt", "1\n2\r\n3", "1\r\n2\r\n3"}, // keeps CRLF
		{"lf.txt", "1\r\n2\n3\r\n", "1\n2\n3\n"}, // keeps LF
		{"oneline.txt", "1\r\n2\n", "1\r\n2\n"},  // no style to keep
		{"bin.dat", "1\n2\n", "1\n2\n"},          // not text
		{"new.txt", "1\r\n2\n", "1\r\n2\n"},      // new file: as given
		{"a/b/c.txt", "bye", "bye"},              // overwrite
		{"empty.txt", "", ""},                    // empty content
		{"./sub/../dot.txt", "d", "d"},           // cleaned
		{"a/b/../b/c2.txt", "e", "e"},            // cleaned, inside
	} {
		w.ok(workspace.WriteTool, jsonArgs("path", c.name, "content", c.content))
		if got := w.read(c.name); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	w.retry(workspace.WriteTool, jsonArgs("path", "a/b", "content", "x"), "a/b is a directory")
	w.retry(workspace.WriteTool, jsonArgs("path", "", "content", "x"), "is the workspace directory")
	w.retry(workspace.WriteTool, jsonArgs("path", "lf.txt/x", "content", "x"), "lf.txt/x")
	w.retry(workspace.WriteTool, `{"path":"x.txt"}`, "invalid arguments")
}

func TestList(t *testing.T) {
	w := newWS(t, nil)
	if got := w.ok(workspace.ListTool, `{}`); got != "Empty directory." {
		t.Fatalf("empty: %q", got)
	}
	w.file("z.txt", "z")
	w.file("c.txt", "ccc")
	w.file(".hidden", "")
	w.file("b/x.txt", "xx")
	w.file("b/d/deep.txt", "deep")
	w.file("a/y.txt", "y")
	mustMkdir(t, filepath.Join(w.dir, "e"))
	w.link("c.txt", "l.txt")                      // inside: listed with the target's size
	w.link("b", "lb")                             // linked directory: listed, not walked
	w.link(w.outside, "out")                      // outside: left out
	w.link("../../outside/TOPSECRET.txt", "outf") // outside: left out
	w.link("missing", "dangling")                 // nowhere: left out
	flat := "a/\nb/\ne/\nlb/\n.hidden (0 bytes)\nc.txt (3 bytes)\nl.txt (3 bytes)\nz.txt (1 bytes)"
	for _, c := range []struct{ args, want string }{
		{`{}`, flat},
		{`{"path":""}`, flat},
		{`{"path":".","depth":1}`, flat},
		{`{"path":"b"}`, "d/\nx.txt (2 bytes)"},
		{`{"path":"lb"}`, "d/\nx.txt (2 bytes)"},
		{`{"path":"e"}`, "Empty directory."},
		{`{"path":"b","depth":0}`, "b/\n├── d/\n│   └── deep.txt (4 bytes)\n└── x.txt (2 bytes)"},
		{`{"depth":2}`, "./\n├── a/\n│   └── y.txt (1 bytes)\n├── b/\n│   ├── d/\n│   └── x.txt (2 bytes)\n├── e/\n├── lb/\n" +
			"├── .hidden (0 bytes)\n├── c.txt (3 bytes)\n├── l.txt (3 bytes)\n└── z.txt (1 bytes)"},
		{`{"depth":0}`, "./\n├── a/\n│   └── y.txt (1 bytes)\n├── b/\n│   ├── d/\n│   │   └── deep.txt (4 bytes)\n│   └── x.txt (2 bytes)\n├── e/\n├── lb/\n" +
			"├── .hidden (0 bytes)\n├── c.txt (3 bytes)\n├── l.txt (3 bytes)\n└── z.txt (1 bytes)"},
		{`{"path":"e","depth":0}`, "Empty directory."},
	} {
		if got := w.ok(workspace.ListTool, c.args); got != c.want {
			t.Errorf("list %s =\n%s\nwant\n%s", c.args, got, c.want)
		}
	}
	err := w.retry(workspace.ListTool, `{"path":"nope"}`, "Directory not found: nope")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v does not match fs.ErrNotExist", err)
	}
	w.retry(workspace.ListTool, `{"path":"z.txt"}`, "Not a directory: z.txt")
	w.retry(workspace.ListTool, `{"depth":-1}`, "depth must be 0")
	w.retry(workspace.ListTool, `{"path":"out"}`, "path escapes workspace root: out")
	w.retry(workspace.ListTool, `{"path":".."}`, "path escapes workspace root: ..")
}

func TestListCap(t *testing.T) {
	w := newWS(t, nil)
	for i := range 1001 {
		w.file(fmt.Sprintf("d/f%04d", i), "")
	}
	for _, args := range []string{`{"path":"d"}`, `{"depth":0}`} {
		got := w.ok(workspace.ListTool, args)
		lines := strings.Split(got, "\n")
		if !strings.HasPrefix(lines[len(lines)-1], "[... more entries not shown: the listing stops at 1000") {
			t.Errorf("%s: last line %q", args, lines[len(lines)-1])
		}
		if strings.Contains(got, "f1000") {
			t.Errorf("%s: shows the 1001st entry", args)
		}
	}
}

func TestGlob(t *testing.T) {
	w := newWS(t, nil)
	for _, name := range []string{"a.md", "b.md", "a.txt", "b.txt", "c.txt", ".dot.md", "docs/x.md", "docs/y.txt",
		"docs/a/b/x.md", "docs/a/z.md", "img/p q.png", "img/r.png"} {
		w.file(name, name)
	}
	mustMkdir(t, filepath.Join(w.dir, "dir.md"))
	w.link("docs", "ld")                                            // inside
	w.link("a.md", "la.md")                                         // inside, to a file
	w.link(w.outside, "out")                                        // outside directory
	w.link(filepath.Join(w.outside, "TOPSECRET.txt"), "secret.txt") // outside file
	w.link("nowhere.md", "dangling.md")
	for _, c := range []struct{ pattern, want string }{
		{"*.md", ".dot.md\na.md\nb.md\nla.md"},
		{"?.txt", "a.txt\nb.txt\nc.txt"},
		{"[ab].txt", "a.txt\nb.txt"},
		{"docs/*.md", "docs/x.md"},
		{"docs/*", "docs/x.md\ndocs/y.txt"},
		{"ld/*.md", "ld/x.md"},
		{"*/x.md", "docs/x.md\nld/x.md"},
		{"**/x.md", "docs/a/b/x.md\ndocs/x.md"},
		{"**/**/x.md", "docs/a/b/x.md\ndocs/x.md"},
		{"docs/**/*.md", "docs/a/b/x.md\ndocs/a/z.md\ndocs/x.md"},
		{"docs/**", "docs/a/b/x.md\ndocs/a/z.md\ndocs/x.md\ndocs/y.txt"},
		{"**/*.png", "img/p q.png\nimg/r.png"},
		{"img/p q.png", "img/p q.png"},
		{"./img/../a.md", "a.md"},
		{"a.md", "a.md"},
		{"la.md", "la.md"},
		{"dir.md", "No files match dir.md"},
		{"docs", "No files match docs"},
		{"*.none", "No files match *.none"},
		{"nodir/*.md", "No files match nodir/*.md"},
		{"a.md/*", "No files match a.md/*"},
		{`\*.md`, "No files match \\*.md"},
	} {
		if got := w.ok(workspace.GlobTool, jsonArgs("pattern", c.pattern)); got != c.want {
			t.Errorf("glob %q =\n%s\nwant\n%s", c.pattern, got, c.want)
		}
	}
	all := w.ok(workspace.GlobTool, `{"pattern":"**"}`)
	if strings.Contains(all, "SECRET") || strings.Contains(all, "dir.md") || strings.Contains(all, "dangling") {
		t.Errorf("** = %s", all)
	}
	w.retry(workspace.GlobTool, `{"pattern":"["}`, "invalid pattern")
	w.retry(workspace.GlobTool, `{"pattern":""}`, "the pattern is empty")
	w.retry(workspace.GlobTool, `{"pattern":"../*"}`, "path escapes workspace root: ../*")
	w.retry(workspace.GlobTool, `{"pattern":"/etc/*"}`, "path escapes workspace root: /etc/*")
	w.retry(workspace.GlobTool, `{"pattern":"a/../../*.txt"}`, "path escapes workspace root: a/../../*.txt")
	w.retry(workspace.GlobTool, `{"pattern":"out/*"}`, "path escapes workspace root: out/*")
	w.retry(workspace.GlobTool, `{"pattern":"secret.txt"}`, "path escapes workspace root: secret.txt")
	w.retry(workspace.GlobTool, "{\"pattern\":\"a\\u0000\"}", "NUL byte")
	if got := w.ok(workspace.GlobTool, `{"pattern":"*/TOPSECRET.txt"}`); got != "No files match */TOPSECRET.txt" {
		t.Errorf("followed a link outside: %s", got)
	}
}

func TestGlobCap(t *testing.T) {
	w := newWS(t, nil)
	for i := range 1003 {
		w.file(fmt.Sprintf("f%04d", i), "")
	}
	got := w.ok(workspace.GlobTool, `{"pattern":"*"}`)
	lines := strings.Split(got, "\n")
	if len(lines) != 1001 || lines[999] != "f0999" || lines[1000] != "[... 3 more files not shown: 1003 files match]" {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestFSDirect(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	mustMkdir(t, filepath.Join(real, "sub"))
	mustSymlink(t, real, filepath.Join(base, "alias"))
	f, err := workspace.Open(filepath.Join(base, "alias"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	realDir, _ := filepath.EvalSymlinks(real)
	if f.Dir() != realDir {
		t.Fatalf("Dir %q, want %q", f.Dir(), realDir)
	}
	// Absolute links inside, through the real path or the alias, resolve.
	mustSymlink(t, filepath.Join(real, "sub"), filepath.Join(real, "abs"))
	mustSymlink(t, filepath.Join(base, "alias", "sub"), filepath.Join(real, "absalias"))
	for _, name := range []string{"abs/x", "absalias/x"} {
		if got, err := f.Resolve(name); err != nil || got != filepath.Join(realDir, "sub", "x") {
			t.Errorf("Resolve(%s) = %q, %v", name, got, err)
		}
	}
	if err := f.WriteFile("abs/x", []byte("via link")); err != nil {
		t.Fatal(err)
	}
	if b, err := f.ReadFile("sub/x"); err != nil || string(b) != "via link" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if paths, err := f.Glob("sub/*"); err != nil || len(paths) != 1 || paths[0] != "sub/x" {
		t.Fatalf("Glob = %v, %v", paths, err)
	}
	if _, err := workspace.Open(filepath.Join(base, "missing")); err == nil {
		t.Fatal("opened a missing directory")
	}
	file := filepath.Join(base, "file")
	mustWrite(t, file, "")
	if _, err := workspace.Open(file); err == nil {
		t.Fatal("opened a file")
	}
	if err := os.Chmod(filepath.Join(real, "sub"), 0); err == nil && os.Geteuid() != 0 {
		defer os.Chmod(filepath.Join(real, "sub"), 0o755)
		if _, err := f.ReadFile("sub/x"); err == nil {
			t.Error("read through an unreadable directory")
		}
	}
}
