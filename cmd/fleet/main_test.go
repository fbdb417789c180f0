package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMainErr runs a small fleet through the command's flags and checks
// the report is printed and the heap profile written.
func TestMainErr(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	prof := filepath.Join(t.TempDir(), "idle.pprof")
	var out, errOut strings.Builder
	if err := mainErr(ctx, []string{"-teams", "2", "-turns", "2", "-heapprofile", prof}, &out, &errOut); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, errOut.String())
	}
	for _, want := range []string{"fleet: 2 teams x 2 turns, 2 in flight", "turns: 4 in ", "turns/s", "per team: heap"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("heap profile: %v", err)
	}
}

func TestMainErrBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-teams", "0"}, {"-nope"}, {"extra"}} {
		var out, errOut strings.Builder
		if err := mainErr(t.Context(), args, &out, &errOut); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
