// Package npmtest installs pinned npm packages for tests that run against
// reference implementations written in JavaScript (the official MCP servers,
// the A2A and AG-UI SDKs).
//
// A test keeps a package.json and its package-lock.json in a folder of its
// testdata and calls [Install] with that folder. The packages are installed
// once per lock file with `npm ci` into a cache folder shared by every test
// binary of the machine, so the versions are exactly those the lock pins and
// a second run costs nothing.
//
// When node or npm is missing the test is skipped, unless the environment
// variable named by [RequireEnv] is set (CI sets it, after installing Node):
// then the test fails, so a reference test never silently stops running in CI.
package npmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// RequireEnv names the environment variable that turns a missing Node into a
// test failure instead of a skip.
const RequireEnv = "AKGENTIC_REQUIRE_NODE"

// installTimeout bounds one `npm ci`.
const installTimeout = 5 * time.Minute

// Install makes the packages pinned by dir's package.json and
// package-lock.json available and returns the folder that holds their
// node_modules. It skips or fails the test as the package doc says when Node
// is missing, and fails it, with npm's output, when the install fails.
func Install(t testing.TB, dir string) string {
	t.Helper()
	node, npm := tool(t, "node"), tool(t, "npm")
	if node == "" || npm == "" {
		return ""
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatalf("npmtest: %v", err)
		return ""
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatalf("npmtest: %v (create it with `npm install --package-lock-only` in %s)", err, dir)
		return ""
	}
	sum := sha256.Sum256(append(append(manifest, 0), lock...))
	key := hex.EncodeToString(sum[:8])

	root, err := cacheRoot()
	if err != nil {
		t.Fatalf("npmtest: %v", err)
		return ""
	}
	target := filepath.Join(root, key)
	if done(target) {
		return target
	}
	unlock, err := lockFile(filepath.Join(root, key+".lock"))
	if err != nil {
		t.Fatalf("npmtest: %v", err)
		return ""
	}
	defer unlock()
	if done(target) { // installed by another test binary while we waited
		return target
	}
	if err := install(npm, target, manifest, lock); err != nil {
		t.Fatalf("npmtest: installing the packages of %s: %v", dir, err)
		return ""
	}
	return target
}

// Bin returns the path of the executable name that an installed package
// provides (node_modules/.bin/name), failing the test when it is absent.
func Bin(t testing.TB, installed, name string) string {
	t.Helper()
	p := filepath.Join(installed, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("npmtest: %s is not installed: %v", name, err)
		return ""
	}
	return p
}

// Node returns the path of the node executable, skipping or failing the test
// as the package doc says when it is missing.
func Node(t testing.TB) string {
	t.Helper()
	return tool(t, "node")
}

// tool finds an executable, skipping the test (or failing it under
// RequireEnv) when it is not on PATH.
func tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("npmtest: %s is required (%s is set) but not found: %v", name, RequireEnv, err)
		return ""
	}
	t.Skipf("npmtest: %s not found (.ci/run installs Node; set %s to make this a failure)", name, RequireEnv)
	return ""
}

// cacheRoot is the folder shared by every test binary of the machine.
func cacheRoot() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	root := filepath.Join(base, "akgentic-npmtest")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	return root, nil
}

// done reports whether target holds a finished install.
func done(target string) bool {
	_, err := os.Stat(filepath.Join(target, ".installed"))
	return err == nil
}

// install runs `npm ci` in a fresh folder and renames it into place, so a
// half-finished install is never taken for a finished one.
func install(npm, target string, manifest, lock []byte) error {
	tmp, err := os.MkdirTemp(filepath.Dir(target), filepath.Base(target)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), manifest, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "package-lock.json"), lock, 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci: %w\n%s", err, out.Bytes())
	}
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), nil, 0o644); err != nil {
		return err
	}
	os.RemoveAll(target) // a stale, unfinished folder
	return os.Rename(tmp, target)
}

// lockFile takes an exclusive lock on path, shared by processes.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
