package layers

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "github.com/akgentic/akgentic-go"

// row is one line of the table: a layer and the package patterns it
// places ("dir" for one package, "dir/..." for it and all below it).
type row struct {
	layer    int
	patterns []string
	line     int
}

// table is the parsed table of layers.
type table []row

var (
	rowRE  = regexp.MustCompile(`^\|\s*(\d+)\s*\|([^|]*)\|`)
	codeRE = regexp.MustCompile("`([^`]+)`")
)

// parseTable reads the rows of the first table under the heading
// "## Layers" of an ARCHITECTURE.md.
func parseTable(md []byte) (table, error) {
	var t table
	in := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = strings.HasPrefix(line, "## Layers")
			continue
		}
		if !in {
			continue
		}
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		layer, _ := strconv.Atoi(m[1])
		r := row{layer: layer, line: n}
		for _, c := range codeRE.FindAllStringSubmatch(m[2], -1) {
			r.patterns = append(r.patterns, strings.TrimSuffix(c[1], "/"))
		}
		if len(r.patterns) == 0 {
			return nil, fmt.Errorf("ARCHITECTURE.md:%d: layer %d names no package in `backquotes`", n, layer)
		}
		t = append(t, r)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf(`ARCHITECTURE.md has no table of layers under "## Layers"`)
	}
	return t, nil
}

// place returns the layer of pkg (a path relative to the module) and the
// pattern that placed it: an exact pattern wins over "dir/...", and the
// longest "dir/..." over a shorter one.
func (t table) place(pkg string) (layer int, pattern string, ok bool) {
	best := -1
	for _, r := range t {
		for _, p := range r.patterns {
			score := -1
			switch {
			case p == pkg:
				score = 1 << 20
			case strings.HasSuffix(p, "/..."):
				dir := strings.TrimSuffix(p, "/...")
				if pkg == dir || strings.HasPrefix(pkg, dir+"/") {
					score = len(dir)
				}
			}
			if score > best {
				best, layer, pattern, ok = score, r.layer, p, true
			}
		}
	}
	return layer, pattern, ok
}

// imports runs go list in the module at root and returns each package's
// imports of the module's own packages, as paths relative to the module.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module's imports: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, ok := rel(f[0])
		if !ok {
			continue
		}
		deps[pkg] = nil
		for _, imp := range f[1:] {
			if r, ok := rel(imp); ok {
				deps[pkg] = append(deps[pkg], r)
			}
		}
	}
	return deps
}

// TestImportsNeverRunUpTheLayers is the check: every package is placed by
// ARCHITECTURE.md's table, every row places a package, and no import runs
// from a layer to a higher one.
func TestImportsNeverRunUpTheLayers(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatalf("the table of layers lives in ARCHITECTURE.md: %v", err)
	}
	tab, err := parseTable(md)
	if err != nil {
		t.Fatal(err)
	}
	deps := imports(t, root)
	if len(deps) < 10 {
		t.Fatalf("go list found %d packages of the module; want all of them", len(deps))
	}
	used := map[string]bool{}
	pkgs := make([]string, 0, len(deps))
	for p := range deps {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		layer, pat, ok := tab.place(pkg)
		if !ok {
			t.Errorf("%s is in no layer of ARCHITECTURE.md's table: add it to the row it belongs to", pkg)
			continue
		}
		used[pat] = true
		for _, imp := range deps[pkg] {
			il, ipat, ok := tab.place(imp)
			if !ok {
				continue // reported as a package of its own
			}
			if il > layer {
				t.Errorf("%s (layer %d, `%s`) imports %s (layer %d, `%s`): an import runs up the layers", pkg, layer, pat, imp, il, ipat)
			}
		}
	}
	for _, r := range tab {
		for _, p := range r.patterns {
			if !used[p] {
				t.Errorf("ARCHITECTURE.md:%d: `%s` (layer %d) places no package of the module", r.line, p, r.layer)
			}
		}
	}
}

// The parser and the placement rules, on a table of their own.
func TestTablePlacesByTheMostSpecificPattern(t *testing.T) {
	md := []byte("# A\n\n## Layers\n\n| layer | packages | job |\n|---|---|---|\n" +
		"| 1 | `internal/...`, `command` | plumbing |\n" +
		"| 2 | `agent/tool` | cards |\n" +
		"| 3 | `agent/tool/...`, `internal/deep/...` | tools |\n" +
		"\n## Next\n\n| 9 | `ignored` | after the section |\n")
	tab, err := parseTable(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab) != 3 {
		t.Fatalf("parsed %d rows, want 3 (a table row after the next heading is not one): %+v", len(tab), tab)
	}
	for pkg, want := range map[string]int{
		"internal/ids": 1, "command": 1, "agent/tool": 2, "agent/tool/mcp": 3,
		"internal/deep/x": 3, "internal": 1,
	} {
		if got, _, ok := tab.place(pkg); !ok || got != want {
			t.Errorf("place(%q) = %d, %v; want layer %d", pkg, got, ok, want)
		}
	}
	if _, _, ok := tab.place("studio"); ok {
		t.Errorf("place(studio) found a layer; the table does not name it")
	}
	if _, err := parseTable([]byte("## Layers\n\n| 1 | no code here | x |\n")); err == nil {
		t.Errorf("a row naming no package in backquotes parsed without error")
	}
	if _, err := parseTable([]byte("# nothing\n")); err == nil {
		t.Errorf("a page with no table of layers parsed without error")
	}
}
