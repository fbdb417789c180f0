package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as a child of the load when it is one
// (the command runs itself again as the server and the workers), and
// otherwise fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	goleak.VerifyTestMain(m)
}

// A small load through the command's flags: every team created and
// passivated, and the report printed.
func TestMainErr(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out, errOut strings.Builder
	args := []string{"-teams", "6", "-workers", "2", "-concurrency", "3", "-idle-after", "200ms", "-idle-window", "200ms"}
	if err := mainErr(ctx, args, &out, &errOut); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, errOut.String())
	}
	for _, want := range []string{
		"clusterload: 6 teams on 2 worker processes",
		"create and first input: 6 in ", "0 failed",
		"all 6 passive ",
		"worker-0: RSS ", "worker-1: RSS ", "B a team", "server: RSS ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestMainErrBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-teams", "0"}, {"-workers", "0"}, {"-idle-after", "-1s"}, {"-idle-settle", "-1s"}, {"-nope"}, {"extra"}} {
		var out, errOut strings.Builder
		if err := mainErr(t.Context(), args, &out, &errOut); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// A child told a role it does not have fails, naming it.
func TestRunRoleUnknown(t *testing.T) {
	if code := runRole("nope"); code == 0 {
		t.Fatal("an unknown role ran")
	}
}
