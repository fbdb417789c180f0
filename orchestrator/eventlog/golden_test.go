package eventlog_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	_ "github.com/akgentic/akgentic-go/agent" // registers the agent's record payloads the demo log holds
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// goldenLogs were written by the codec as it was before the hand-written
// encoder and decoder: testdata/golden-v1.log holds one record
// of each kind plus a string with every kind of escape; the demo's log is a
// whole team's life, agent payloads included. Never regenerate them.
var goldenLogs = []string{
	filepath.Join("testdata", "golden-v1.log"),
	filepath.Join("..", "..", "cmd", "demo", "testdata", "golden-v1.log"),
}

// TestGoldenLogReencodes reads each golden log and checks that every record
// re-encodes to JSON equal to its line in the file (compared as decoded
// generic values, so key order and number spelling do not matter).
func TestGoldenLogReencodes(t *testing.T) {
	for _, path := range goldenLogs {
		t.Run(filepath.ToSlash(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			log, err := eventlog.ReadFile(path)
			if err != nil || log.Truncated != nil {
				t.Fatalf("ReadFile: %v (truncated %v)", err, log.Truncated)
			}
			lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))[1:]
			if len(lines) != len(log.Messages) {
				t.Fatalf("%d records from %d lines", len(log.Messages), len(lines))
			}
			for i, m := range log.Messages {
				enc, err := message.Marshal(m)
				if err != nil {
					t.Fatalf("line %d: re-encode %s: %v", i+2, message.TypeName(m), err)
				}
				if !sameJSON(t, enc, lines[i]) {
					t.Errorf("line %d (%s) re-encodes differently:\nfile %s\nnow  %s", i+2, message.TypeName(m), lines[i], enc)
				}
			}
		})
	}
}

// sameJSON reports whether a and b decode to equal generic values.
func sameJSON(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		tb.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		tb.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}
