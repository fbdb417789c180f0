// Package docs_test compiles and runs the code the pages show: README.md
// and docs/*.md. Each Go block of a page appears verbatim in a Go file of
// the repository (an Example here, or one the packages test), so a page
// never shows code that does not build.
package docs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when an example leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// goBlock is a fenced Go block of a Markdown page.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// normalize drops each line's leading tabs and trailing blanks, so that a
// page may show a function's body without its indentation.
func normalize(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.TrimLeft(l, "\t"), " \t")
	}
	return "\n" + strings.Trim(strings.Join(lines, "\n"), "\n") + "\n"
}

// TestPagesShowTestedCode fails for a Go block of a page that no Go file of
// the repository holds verbatim (but for leading tabs).
func TestPagesShowTestedCode(t *testing.T) {
	var sources []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && strings.HasSuffix(path, ".go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, normalize(string(data)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"), filepath.Join("..", "examples", "README.md"))
	blocks := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("```golang")) {
			t.Errorf("%s: mark Go blocks as ```go", page)
		}
		for _, m := range goBlock.FindAllSubmatchIndex(data, -1) {
			blocks++
			block := normalize(string(data[m[2]:m[3]]))
			line := 1 + bytes.Count(data[:m[0]], []byte("\n"))
			found := false
			for _, src := range sources {
				if strings.Contains(src, block) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s:%d: the Go block is in no Go file of the repository:\n%s", page, line, block)
			}
		}
	}
	if blocks == 0 {
		t.Errorf("no Go block found in %d pages: the pattern finds none", len(pages))
	}
}

// link is a Markdown link's target; code is a fenced block or a code
// span, where brackets are Go.
var (
	link = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code = regexp.MustCompile("(?ms)^```.*?^```|`[^`\n]*`")
)

// TestPagesLinkToFilesThatExist fails for a relative link of a page to a
// file the repository does not have.
func TestPagesLinkToFilesThatExist(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"), filepath.Join("..", "examples", "README.md"))
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		prose := code.ReplaceAllString(string(data), "")
		for _, m := range link.FindAllStringSubmatch(prose, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
				t.Errorf("%s: link to %s: %v", page, m[1], err)
			}
		}
	}
}
