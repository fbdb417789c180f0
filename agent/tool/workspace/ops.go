package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Defaults of the tools' arguments.
const (
	// defaultReadLimit is how many lines workspace_read returns by default.
	defaultReadLimit = 2000
	// maxListEntries bounds the entries workspace_list shows.
	maxListEntries = 1000
	// maxGlobResults bounds the paths workspace_glob shows.
	maxGlobResults = 1000
	// sniffBytes is how much of a file is checked for NUL bytes.
	sniffBytes = 8 << 10
)

// Extensions (lower case, with the dot) of the formats media references and
// workspace_read know.
var (
	imageTypes = map[string]string{
		".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
		".gif": "image/gif", ".webp": "image/webp", ".bmp": "image/bmp",
	}
	documentTypes = map[string]bool{
		".pdf": true, ".docx": true, ".xlsx": true, ".xls": true,
		".pptx": true, ".msg": true, ".epub": true,
	}
)

func ext(name string) string { return strings.ToLower(path.Ext(filepath.ToSlash(name))) }

// readText returns lines of the text file name as workspace_read shows
// them: from line offset (1 for the first; 0 means 1), at most limit
// lines (0 means defaultReadLimit), each prefixed by its number
// left-aligned in a 6-wide column, then a truncation line when lines
// remain.
func (f *FS) readText(name string, offset, limit int) (string, error) {
	switch {
	case offset < 0:
		return "", retry(nil, "offset must be 1 or more (the first line is 1), got %d", offset)
	case limit < 0:
		return "", retry(nil, "limit must be 1 or more, got %d", limit)
	case offset == 0:
		offset = 1
	}
	if limit == 0 {
		limit = defaultReadLimit
	}
	e := ext(name)
	extract := extractors[e]
	if extract == nil && (documentTypes[e] || imageTypes[e] != "") {
		fh, _, err := f.openFile(name) // a missing file is not found first
		if err != nil {
			return "", err
		}
		fh.Close()
		if documentTypes[e] {
			return "", retry(errUnsupported, "Unsupported format: %s is a %s document; workspace_read extracts text from .pdf and .docx documents only", name, e)
		}
		return "", retry(errUnsupported, "Unsupported format: %s is an image; workspace_read reads text files only", name)
	}
	data, err := f.ReadFile(name)
	if err != nil {
		return "", err
	}
	var text string
	switch {
	case extract != nil:
		if text, err = extract(data, f.limit()); err != nil {
			return "", retry(errUnsupported, "Cannot extract the text of %s: %v", name, err)
		}
		if strings.TrimSpace(text) == "" {
			return "(no text in document)", nil
		}
	case bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0:
		return "", retry(errUnsupported, "Unsupported format: %s is a binary file; workspace_read reads text files only", name)
	case len(data) == 0:
		return "(empty file)", nil
	default:
		text = string(data)
	}
	total := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		total++
	}
	if offset > total {
		return "", retry(nil, "offset %d is past the end of %s (%d lines)", offset, name, total)
	}
	limit = min(limit, total) // offset+limit cannot overflow
	var b strings.Builder
	b.Grow(min(len(text), limit*128))
	n, last := 0, offset-1
	for line := range strings.Lines(text) {
		if n++; n < offset {
			continue
		}
		if n >= offset+limit {
			break
		}
		if n > offset {
			b.WriteByte('\n')
		}
		num := strconv.Itoa(n) // left-aligned in 6 columns: %-6d
		b.WriteString(num)
		b.WriteString("      "[min(len(num), 6):])
		b.WriteString(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
		last = n
	}
	if last < total {
		fmt.Fprintf(&b, "\n[... truncated: %d lines total, showing %d-%d ...]", total, offset, last)
	}
	return b.String(), nil
}

// writeText writes content to the file name as workspace_write does:
// parent directories are created, and when the file exists as text its
// line-ending style (CRLF or LF) is applied to content. It returns
// "Written: <name>".
func (f *FS) writeText(name, content string) (string, error) {
	rel, err := f.prepareWrite(name, int64(len(content)))
	if err != nil {
		return "", err
	}
	switch f.lineEnding(rel) {
	case "\n":
		content = strings.ReplaceAll(content, "\r\n", "\n")
	case "\r\n":
		content = strings.ReplaceAll(strings.ReplaceAll(content, "\r\n", "\n"), "\n", "\r\n")
	}
	if int64(len(content)) > f.limit() {
		return "", f.tooLarge(name, int64(len(content)))
	}
	if err := f.write(name, rel, []byte(content)); err != nil {
		return "", err
	}
	return "Written: " + name, nil
}

// entry is one directory entry as listings show it.
type entry struct {
	name string
	dir  bool
	link bool // a symbolic link (to somewhere inside the workspace)
	size int64
}

func (e entry) String() string {
	if e.dir {
		return e.name + "/"
	}
	return e.name + " (" + strconv.FormatInt(e.size, 10) + " bytes)"
}

// entries returns the directory rel's entries (rel is link-free):
// directories first, then files, each sorted by name. Links that lead
// outside the workspace or nowhere are left out.
func (f *FS) entries(rel string) ([]entry, error) {
	d, err := f.root.Open(rel)
	if err != nil {
		return nil, err
	}
	des, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(des))
	for _, de := range des {
		e := entry{name: de.Name()}
		var fi fs.FileInfo
		if de.Type()&fs.ModeSymlink != 0 {
			e.link = true
			r, err := f.rel(filepath.Join(rel, de.Name()))
			if err != nil {
				continue
			}
			if fi, err = f.root.Stat(r); err != nil {
				continue
			}
		} else if fi, err = de.Info(); err != nil {
			continue // removed meanwhile
		}
		e.dir, e.size = fi.IsDir(), fi.Size()
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].dir != out[j].dir {
			return out[i].dir
		}
		return out[i].name < out[j].name
	})
	return out, nil
}

// listText lists the directory name as workspace_list does: depth 1 is a
// flat listing; depth 0 (unlimited) or above 1 an ASCII tree that does not
// descend into linked directories.
func (f *FS) listText(name string, depth int) (string, error) {
	if depth < 0 {
		return "", retry(nil, "depth must be 0 (unlimited) or more, got %d", depth)
	}
	rel, err := f.rel(name)
	if err != nil {
		return "", err
	}
	fi, err := f.root.Stat(rel)
	if err != nil {
		if err = f.fail("list", name, err); errors.Is(err, fs.ErrNotExist) {
			return "", retry(fs.ErrNotExist, "Directory not found: %s", name)
		}
		return "", err
	}
	if !fi.IsDir() {
		return "", retry(nil, "Not a directory: %s", name)
	}
	es, err := f.entries(rel)
	if err != nil {
		return "", f.fail("list", name, err)
	}
	if len(es) == 0 {
		return "Empty directory.", nil
	}
	l := &lister{f: f, depth: depth}
	if depth == 1 {
		for _, e := range es {
			l.add(e.String())
		}
		return l.String(), nil
	}
	l.lines = append(l.lines, filepath.ToSlash(filepath.Clean(name))+"/") // "./" for the root
	l.tree(rel, es, "", 1)
	return l.String(), nil
}

// lister gathers listing lines up to maxListEntries.
type lister struct {
	f     *FS
	depth int
	lines []string
	n     int  // entries added
	more  bool // entries left out
}

func (l *lister) add(s string) bool {
	if l.n == maxListEntries {
		l.more = true
		return false
	}
	l.n++
	l.lines = append(l.lines, s)
	return true
}

func (l *lister) tree(rel string, es []entry, indent string, level int) {
	for i, e := range es {
		branch, next := "├── ", "│   "
		if i == len(es)-1 {
			branch, next = "└── ", "    "
		}
		if !l.add(indent + branch + e.String()) {
			return
		}
		if !e.dir || e.link || (l.depth != 0 && level >= l.depth) {
			continue
		}
		sub := filepath.Join(rel, e.name)
		children, err := l.f.entries(sub)
		if err == nil {
			l.tree(sub, children, indent+next, level+1)
		}
	}
}

func (l *lister) String() string {
	s := strings.Join(l.lines, "\n")
	if l.more {
		s += fmt.Sprintf("\n[... more entries not shown: the listing stops at %d; list a subdirectory]", maxListEntries)
	}
	return s
}

// isFile reports whether the link-free path rel, or what it links to inside
// the workspace, is a regular file.
func (f *FS) isFile(rel string) (string, bool) {
	r, err := f.rel(rel)
	if err != nil {
		return "", false
	}
	fi, err := f.root.Stat(r)
	return r, err == nil && fi.Mode().IsRegular()
}

// statDir reports whether the link-free path rel is a directory.
func (f *FS) statDir(rel string) bool {
	fi, err := f.root.Stat(rel)
	return err == nil && fi.IsDir()
}
