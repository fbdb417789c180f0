// Command refcheck fails when a file of the repository refers to a document
// its readers do not have: a numbered behaviour id (a capital A, B, C or S
// and one to three digits, as a word or glued to a test's name), an issue
// number, a numbered design decision or scenario, a numbered "wave", the
// "seed" text the project was specified from, or a path into notes kept
// outside the repository. The repository must read on its own: say the
// behaviour in words, and name a test after what it pins down.
//
// Usage (from the module root):
//
//	go run ./internal/tools/refcheck [path ...]
//
// It reads every file git tracks (and untracked files not ignored) under
// the paths (the whole repository when none is given), skips binary files, prints each hit as path:line: text, and exits 1
// when there is any. There is no allowlist.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// rules are the references the check refuses, each with why.
var rules = []struct {
	re  *regexp.Regexp
	why string
}{
	// A behaviour id as a word, in parentheses, before a colon or after
	// "see". Base64's short name is exempt below: it is a word, not an id.
	{regexp.MustCompile(`\b[ABCS][0-9]{1,3}[a-z]?\b`), "a behaviour id"},
	// An id glued to an identifier: at the end of a test's name, after an
	// underscore, or right after "Test".
	{regexp.MustCompile(`(?:[a-z_]|\bTest|\bBenchmark|\bExample|\bFuzz)[ABCS][0-9]{1,3}(?:[A-Z_]|[a-z]?\b)`), "a behaviour id in a name"},
	{regexp.MustCompile(`(?i)\bissues? #?[0-9]+`), "an issue number"},
	{regexp.MustCompile(`\bD[E]SIGN\b|\bS[T]YLE\.md|(?i)\bdecision [A-Z]?[0-9]+|\bscenario [0-9]+`), "a design decision"},
	{regexp.MustCompile(`(?i)\bwave[- ]?[0-9]+`), "a wave"},
	{regexp.MustCompile(`(?i)\bth[e] seeds?\b|\bseeds?/|\bseed (?:README|text|says)`), "the text the project was specified from"},
	{regexp.MustCompile(`\.\./shared|\bshared/(?:spec|seeds|notes|hooks)|\b(?:core|agent)-spec\b`), "a path outside the repository"},
}

// exempt are words that look like an id and are not one.
var exempt = regexp.MustCompile(`\b[B]64\b|[Bb]ase64|\bA[2]A\b`)

func main() {
	paths := os.Args[1:]
	if len(paths) == 0 {
		paths = []string{"."}
	}
	files, err := listFiles(paths)
	if err != nil {
		fmt.Fprintln(os.Stderr, "refcheck:", err)
		os.Exit(2)
	}
	hits := 0
	for _, f := range files {
		n, err := checkFile(os.Stdout, f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "refcheck:", err)
			os.Exit(2)
		}
		hits += n
	}
	if hits > 0 {
		fmt.Printf("refcheck: %d references to documents outside the repository in %d files checked; say the behaviour in words\n", hits, len(files))
		os.Exit(1)
	}
	fmt.Printf("refcheck: %d files, no reference outside the repository\n", len(files))
}

// listFiles returns the files git knows under paths (tracked, and
// untracked ones not ignored).
func listFiles(paths []string) ([]string, error) {
	args := append([]string{"ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"}, paths...)
	cmd := exec.Command("git", args...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) == 0 {
			continue
		}
		name := string(f)
		switch filepath.Base(name) {
		case "go.sum", "package-lock.json":
			continue // checksums, not prose
		}
		files = append(files, name)
	}
	return files, nil
}

// checkFile prints the hits in the file at path and returns how many. A
// file that is gone (deleted, not yet staged) or binary is skipped.
func checkFile(w io.Writer, path string) (int, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return 0, nil
	}
	return check(w, path, data), nil
}

// check prints each line of data that holds a reference and returns how
// many lines did.
func check(w io.Writer, path string, data []byte) int {
	hits := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if why := refers(text); why != "" {
			hits++
			fmt.Fprintf(w, "%s:%d: %s: %s\n", path, line, why, clip(strings.TrimSpace(text), 160))
		}
	}
	return hits
}

// refers says why text refers outside the repository, or "" when it does
// not.
func refers(text string) string {
	clean := exempt.ReplaceAllString(text, "")
	for _, r := range rules {
		if r.re.MatchString(clean) {
			return r.why
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
