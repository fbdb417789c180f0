package message_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/message"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const goldenDir = "testdata/golden"

// pretty is the golden form of encoded JSON: two-space indent, final newline.
func pretty(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		t.Fatalf("indent %s: %v", data, err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// goldens returns the golden form of every sample, keyed by file stem: one
// per registered type (records and payloads) and one for a serialized
// address.
func goldens(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, v := range samples() {
		data, err := message.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%s): %v", name, err)
		}
		out[name] = pretty(t, data)
	}
	data, err := json.Marshal(greeter())
	if err != nil {
		t.Fatal(err)
	}
	out["Address"] = pretty(t, data)
	return out
}

// TestGolden pins the persisted JSON of every record, payload and of an
// address, byte for byte. Run `go test ./message/ -run TestGolden -update`
// to rewrite the files after an intended format change, and review the
// diff: stored events must keep decoding.
func TestGolden(t *testing.T) {
	want := goldens(t)
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		path := filepath.Join(goldenDir, name+".json")
		if *update {
			if err := os.WriteFile(path, want[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (run with -update to create it)", err)
			continue
		}
		if !bytes.Equal(got, want[name]) {
			t.Errorf("%s differs from what %s encodes to (run with -update if the change is intended):\n%s",
				path, name, firstDiff(got, want[name]))
		}
	}

	// No stale files: every golden belongs to a sample.
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := want[strings.TrimSuffix(filepath.Base(f), ".json")]; !ok {
			t.Errorf("stale golden file %s", f)
		}
	}
}

// TestGoldenDecodes checks that each stored golden decodes to its type and
// encodes back to the same bytes: the persisted format is readable.
func TestGoldenDecodes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files (%v)", err)
	}
	for _, f := range files {
		stored, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		var again []byte
		if name == "Address" {
			var a message.Address
			if err := json.Unmarshal(stored, &a); err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			again, _ = json.Marshal(&a)
		} else {
			v, err := message.Unmarshal(stored)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if got := message.TypeName(v); got != name {
				t.Errorf("%s decodes to %s", f, got)
			}
			if again, err = message.Marshal(v); err != nil {
				t.Errorf("%s: re-encode: %v", f, err)
				continue
			}
		}
		if got := pretty(t, again); !bytes.Equal(got, stored) {
			t.Errorf("%s does not re-encode to itself:\n%s", f, firstDiff(stored, got))
		}
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n  file:    " + x + "\n  encoded: " + y
		}
	}
	return "(no line differs)"
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
