package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestInstallRunsThePinnedPackage installs a one-package lock file and runs
// the installed package with node: the version is the one the lock pins.
func TestInstallRunsThePinnedPackage(t *testing.T) {
	dir := Install(t, filepath.Join("testdata", "ok"))
	node := Node(t)
	out, err := exec.Command(node, "-e",
		`const p=require(process.argv[1]+'/package.json');console.log(p.version)`,
		filepath.Join(dir, "node_modules", "is-number")).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	if got := string(out); got != "7.0.0\n" {
		t.Fatalf("installed version = %q, want 7.0.0", got)
	}
	if again := Install(t, filepath.Join("testdata", "ok")); again != dir {
		t.Fatalf("second Install = %s, want the cached %s", again, dir)
	}
}

// TestInstallWithoutLockFileFails names the missing lock file rather than
// letting npm resolve versions of its own.
func TestInstallWithoutLockFileFails(t *testing.T) {
	Node(t) // skips where Node is missing, like Install
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	Install(ft, dir)
	if !ft.failed {
		t.Fatal("Install without package-lock.json did not fail the test")
	}
}

// TestBinNamesAMissingExecutable fails the test, not the binary.
func TestBinNamesAMissingExecutable(t *testing.T) {
	ft := &fakeT{TB: t}
	Bin(ft, t.TempDir(), "nothing-here")
	if !ft.failed {
		t.Fatal("Bin of a missing executable did not fail the test")
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
func (f *fakeT) Skipf(string, ...any)  { f.failed = true }
