package workspace_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/tool/workspace"
)

// BenchmarkResolve resolves a three-level path through one link: one
// Lstat per component, plus the link's Readlink and the restart.
func BenchmarkResolve(b *testing.B) {
	f, _ := tree(b, b.TempDir())
	for b.Loop() {
		if _, err := f.Resolve("in/deep/file.txt"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead formats the default window (2000 lines) of a 2500-line file.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&sb, "line %d of a text file with some words in it\n", i)
	}
	mustWrite(b, filepath.Join(dir, "big.txt"), sb.String())
	f, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Read("big.txt", 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExpandMediaRefs expands a prompt with one 100 KB image.
func BenchmarkExpandMediaRefs(b *testing.B) {
	dir := b.TempDir()
	mustWrite(b, filepath.Join(dir, "shot.png"), strings.Repeat("x", 100<<10))
	f, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ReportAllocs()
	for b.Loop() {
		if parts := f.ExpandMediaRefs("look at !!shot.png please"); len(parts) != 3 {
			b.Fatal(parts)
		}
	}
}
