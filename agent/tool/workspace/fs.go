package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// defaultMaxFileBytes is the largest file an [FS] reads or writes when its
// MaxFileBytes is zero: 16 MiB.
const defaultMaxFileBytes = 16 << 20

// maxSymlinks bounds the links followed while resolving one path, as the
// kernel does (ELOOP).
const maxSymlinks = 40

// Errors the file operations wrap. Each failure the model can fix is also an
// [*llm.RetryError] (errors.As finds it), so a tool returns it as is.
var (
	// ErrEscape marks a path that leads outside the workspace.
	ErrEscape = errors.New("path escapes workspace root")
	// ErrTooLarge marks a file (or content) above the size limit.
	ErrTooLarge = errors.New("workspace: file too large")
	// errUnsupported marks a file format workspace_read cannot show.
	errUnsupported = errors.New("workspace: unsupported format")
)

// pathError is a retry error that also matches a kind with errors.Is.
type pathError struct {
	kind  error // nil, or a sentinel (ErrEscape, fs.ErrNotExist, ...)
	retry *llm.RetryError
}

func (e *pathError) Error() string { return e.retry.Message }

func (e *pathError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.retry}
	}
	return []error{e.kind, e.retry}
}

// retry returns a retry error with the formatted message, matching kind.
func retry(kind error, format string, args ...any) error {
	return &pathError{kind: kind, retry: &llm.RetryError{Message: fmt.Sprintf(format, args...)}}
}

func escapes(name string) error {
	return retry(ErrEscape, "path escapes workspace root: %s", name)
}

// isEscape reports whether err is os.Root refusing a path that leaves it.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// FS is a workspace directory: every path it takes is relative to the
// directory and may not lead outside it (see the package documentation).
// Its methods are safe for concurrent use.
type FS struct {
	// MaxFileBytes is the largest file read or written; zero means 16 MiB.
	// Set it before the FS is used.
	MaxFileBytes int64

	dir   string   // the directory, absolute and free of symbolic links
	alias string   // the directory as given (absolute), when it differs
	root  *os.Root // opened on dir
}

// Open opens the existing directory dir as a workspace. Close releases it
// (or the garbage collector does, once the FS is unreachable).
func Open(dir string) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: open %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: open %s: %w", dir, err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: open %s: %w", dir, err)
	}
	f := &FS{dir: real, root: root}
	if abs != real {
		f.alias = abs
	}
	return f, nil
}

// Dir returns the workspace directory: absolute, symbolic links resolved.
func (f *FS) Dir() string { return f.dir }

// Close releases the directory handle.
func (f *FS) Close() error { return f.root.Close() }

func (f *FS) limit() int64 {
	if f.MaxFileBytes > 0 {
		return f.MaxFileBytes
	}
	return defaultMaxFileBytes
}

// resolve returns the absolute host path that name, relative to the
// workspace, designates once every symbolic link in it is followed. A path
// that leads outside the workspace is an error matching [ErrEscape]; a path
// that does not exist resolves through its deepest existing ancestor. ""
// and "." are the workspace directory itself.
func (f *FS) resolve(name string) (string, error) {
	rel, err := f.rel(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(f.dir, rel), nil
}

// rel resolves name to a clean path relative to the workspace ("." for the
// workspace itself) whose existing components are no symbolic links.
func (f *FS) rel(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", retry(nil, "invalid path %q: it contains a NUL byte", name)
	}
	p := "."
	if name != "" {
		if !filepath.IsLocal(name) {
			return "", escapes(name)
		}
		p = filepath.Clean(name)
	}
	sep := string(filepath.Separator)
	for hops := 0; ; {
		if p == "." {
			return p, nil
		}
		parts := strings.Split(p, sep)
		next := ""
		for i := range parts {
			prefix := filepath.Join(parts[:i+1]...)
			fi, err := f.root.Lstat(prefix)
			if err != nil {
				if isEscape(err) { // a component changed under us
					return "", escapes(name)
				}
				// Missing (or below a file): nothing further can be a link;
				// the operation reports what is wrong.
				return p, nil
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if hops++; hops > maxSymlinks {
				return "", retry(nil, "too many levels of symbolic links: %s", name)
			}
			target, err := f.root.Readlink(prefix)
			if err != nil {
				return "", f.fail("resolve", name, err)
			}
			t, ok := f.inside(filepath.Join(parts[:i]...), target)
			if !ok {
				return "", escapes(name)
			}
			next = filepath.Join(append([]string{t}, parts[i+1:]...)...)
			break
		}
		if next == "" {
			return p, nil
		}
		p = next
	}
}

// inside returns the workspace-relative path a link in dir (relative,
// link-free) pointing at target designates, and whether it is inside.
func (f *FS) inside(dir, target string) (string, bool) {
	if filepath.IsAbs(target) {
		t := filepath.Clean(target)
		for _, base := range []string{f.dir, f.alias} {
			if base == "" {
				continue
			}
			if r, err := filepath.Rel(base, t); err == nil && (r == "." || filepath.IsLocal(r)) {
				return r, true
			}
		}
		return "", false
	}
	t := filepath.Join(dir, target)
	if t == "" || t == "." {
		return ".", true
	}
	return t, filepath.IsLocal(t)
}

// fail turns an error of an os.Root operation on name into a retry error.
func (f *FS) fail(op, name string, err error) error {
	var pe *fs.PathError
	switch {
	case isEscape(err):
		return escapes(name)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return retry(fs.ErrNotExist, "File not found: %s", name)
	case errors.As(err, &pe):
		return retry(nil, "cannot %s %s: %v", op, name, pe.Err)
	}
	return retry(nil, "cannot %s %s: %v", op, name, err)
}

func (f *FS) tooLarge(name string, size int64) error {
	return retry(ErrTooLarge, "File too large: %s (%d bytes; the limit is %d bytes)", name, size, f.limit())
}

// openFile resolves name, checks it is a regular file within the size limit
// and opens it.
func (f *FS) openFile(name string) (*os.File, int64, error) {
	rel, err := f.rel(name)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.root.Stat(rel)
	switch {
	case err != nil:
		return nil, 0, f.fail("read", name, err)
	case fi.IsDir():
		return nil, 0, retry(nil, "%s is a directory, not a file; use workspace_list", name)
	case !fi.Mode().IsRegular():
		return nil, 0, retry(nil, "%s is not a regular file", name)
	case fi.Size() > f.limit():
		return nil, 0, f.tooLarge(name, fi.Size())
	}
	fh, err := f.root.Open(rel)
	if err != nil {
		return nil, 0, f.fail("read", name, err)
	}
	return fh, fi.Size(), nil
}

// ReadFile returns the content of the file name, refusing one above the
// size limit.
func (f *FS) ReadFile(name string) ([]byte, error) {
	fh, _, err := f.openFile(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	max := f.limit()
	data, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, f.fail("read", name, err)
	}
	if int64(len(data)) > max { // it grew since the check
		return nil, f.tooLarge(name, int64(len(data)))
	}
	return data, nil
}

// WriteFile writes data to the file name, creating it and its parent
// directories as needed. It refuses data above the size limit.
func (f *FS) WriteFile(name string, data []byte) error {
	rel, err := f.prepareWrite(name, int64(len(data)))
	if err != nil {
		return err
	}
	return f.write(name, rel, data)
}

// prepareWrite resolves name for writing size bytes.
func (f *FS) prepareWrite(name string, size int64) (string, error) {
	rel, err := f.rel(name)
	if err != nil {
		return "", err
	}
	if size > f.limit() {
		return "", f.tooLarge(name, size)
	}
	if rel == "." {
		return "", retry(nil, "%q is the workspace directory, not a file", name)
	}
	return rel, nil
}

func (f *FS) write(name, rel string, data []byte) error {
	if dir := filepath.Dir(rel); dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return f.fail("create the directory of", name, err)
		}
	}
	fh, err := f.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, syscall.EISDIR) {
			return retry(nil, "%s is a directory, not a file", name)
		}
		return f.fail("write", name, err)
	}
	_, err = fh.Write(data)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return f.fail("write", name, err)
	}
	return nil
}

// lineEnding returns "\r\n" or "\n" as the existing text file rel uses, or
// "" when it does not exist, is not text or has no line break.
func (f *FS) lineEnding(rel string) string {
	fh, err := f.root.Open(rel)
	if err != nil {
		return ""
	}
	defer fh.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(fh, head)
	head = head[:n]
	i := bytes.IndexByte(head, '\n')
	switch {
	case bytes.IndexByte(head, 0) >= 0, i < 0:
		return ""
	case i > 0 && head[i-1] == '\r':
		return "\r\n"
	}
	return "\n"
}
