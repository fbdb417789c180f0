// Command apicount counts the exported identifiers of the library: types,
// functions, methods (on exported types, and in exported interfaces),
// constants and variables. Struct fields are not counted. Test files,
// internal/, examples/ and cmd/ are excluded.
//
// Usage (from the module root):
//
//	go run ./internal/tools/apicount [-max N] [-pkg-max dir=N ...] [-v]
//
// It prints the total and the count per package, and exits 1 when a limit
// is exceeded.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type limits map[string]int

func (l limits) String() string { return fmt.Sprint(map[string]int(l)) }

func (l limits) Set(v string) error {
	dir, n, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want dir=N, got %q", v)
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return fmt.Errorf("want dir=N, got %q: %w", v, err)
	}
	l[dir] = i
	return nil
}

func main() {
	max := flag.Int("max", 0, "fail when the library exports more identifiers than this (0: no limit)")
	pkgMax := limits{}
	flag.Var(pkgMax, "pkg-max", "dir=N: fail when the package in dir exports more than N (repeatable)")
	verbose := flag.Bool("v", false, "list every identifier")
	flag.Parse()

	counts, names, err := count(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	dirs := make([]string, 0, len(counts))
	total := 0
	for d, n := range counts {
		dirs = append(dirs, d)
		total += n
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		fmt.Printf("%5d  %s\n", counts[d], d)
		if *verbose {
			sort.Strings(names[d])
			for _, n := range names[d] {
				fmt.Printf("         %s\n", n)
			}
		}
	}
	fmt.Printf("%5d  exported identifiers in all\n", total)
	failed := false
	if *max > 0 && total > *max {
		fmt.Printf("FAIL: %d exported identifiers, over the limit of %d\n", total, *max)
		failed = true
	}
	for d, n := range pkgMax {
		if counts[d] > n {
			fmt.Printf("FAIL: %s exports %d identifiers, over its limit of %d\n", d, counts[d], n)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func skipDir(path string) bool {
	base := filepath.Base(path)
	if path != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
		return true
	}
	switch base {
	case "testdata", "internal", "examples", "cmd", "vendor":
		return true
	}
	return false
}

// count walks root and returns the exported identifiers per package dir.
func count(root string) (map[string]int, map[string][]string, error) {
	counts := map[string]int{}
	names := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(path) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		add := func(n string) {
			counts[dir]++
			names[dir] = append(names[dir], n)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					add(d.Name.Name)
					continue
				}
				if recv := recvName(d.Recv.List[0].Type); ast.IsExported(recv) {
					add(recv + "." + d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						add(s.Name.Name)
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									if n.IsExported() {
										add(s.Name.Name + "." + n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								add(n.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	return counts, names, err
}

func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
