package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The texts below are built from pieces so that this file does not hold
// the references it checks for.
func TestRefersFindsEachKindOfOutsideReference(t *testing.T) {
	id := "B" + "44"
	refs := []string{
		"// a dead actor's ask fails (" + id + ")",
		"// " + "A" + "40" + ": the roster",
		"func TestHireRefusals" + "C" + "4" + "(t *testing.T) {",
		"func TestHelp_" + "A" + "70" + "(t *testing.T) {",
		"func Test" + "B" + "24" + "Stop(t *testing.T) {",
		"// built for " + "issue" + " 14",
		"// see " + "Issue" + " #16",
		"// as " + "DES" + "IGN 12 says",
		"// decision" + " 10: validated",
		"// " + "scenario" + " 1: the quick start",
		"// added in " + "wave" + " 2",
		"// " + "the" + " seed's quick start",
		"// see .." + "/shared/" + "notes/telemetry.md",
	}
	for _, r := range refs {
		if refers(r) == "" {
			t.Errorf("refers(%q) found nothing; want it refused", r)
		}
	}
}

func TestRefersLeavesOrdinaryTextAlone(t *testing.T) {
	ok := []string{
		"// the payload is base64, like " + "B" + "64 in the config",
		"// an " + "A2A" + " agent card",
		"// a random seed for sampling (Seed *int)",
		"func TestStopCascadeStopsGrandchildrenFirst(t *testing.T) {",
		"// SHA256 and utf8 and x509 and ipv4",
		"// 404 from the server; a 2xx answer",
		"// see the reference implementation",
	}
	for _, s := range ok {
		if why := refers(s); why != "" {
			t.Errorf("refers(%q) = %q; want no reference", s, why)
		}
	}
}

func TestCheckNamesTheFileAndLine(t *testing.T) {
	var out bytes.Buffer
	data := []byte("package x\n\n// fine\n// (" + "A" + "22) not fine\n")
	if n := check(&out, "x/y.go", data); n != 1 {
		t.Fatalf("check found %d hits, want 1:\n%s", n, out.String())
	}
	if !strings.HasPrefix(out.String(), "x/y.go:4: a behaviour id: ") {
		t.Errorf("check printed %q; want it to start with the path, the line and why", out.String())
	}
}
