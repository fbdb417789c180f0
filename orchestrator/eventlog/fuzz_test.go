package eventlog_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/akgentic/akgentic-go/message"

	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// FuzzRead feeds arbitrary bytes to Read (the hand-written record decoder,
// and encoding/json where it falls back). It must never panic; every record
// read must re-encode and decode again to an equal value; what it returns
// must agree with the input: a log read without error holds one
// record per complete line after the header, a truncation is reported
// exactly when the input does not end with a newline, and an error points
// at a line that exists. Seeds: a real log written by a Writer, its torn
// and damaged variants, and edge cases. The real log is ~10 KB, so
// minimizing a new input is slow; -fuzzminimizetime=3s keeps the fuzzer
// fuzzing: go test -run '^$' -fuzz FuzzRead -fuzzminimizetime 3s.
func FuzzRead(f *testing.F) {
	tm := newTeam()
	path := filepath.Join(f.TempDir(), "team.log")
	w, err := eventlog.Create(path, tm.id, eventlog.Options{Sync: eventlog.SyncNone, Logger: discard})
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range tm.records() {
		w.OnMessage(r)
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(whole)
	f.Add(whole[:len(whole)-1])
	f.Add(whole[:len(whole)/2])
	first := bytes.IndexByte(whole, '\n') + 1
	f.Add(whole[:first])
	f.Add(bytes.Replace(whole, []byte(`"SentMessage"`), []byte(`"SentMessagX"`), 1))
	f.Add(bytes.Replace(whole, []byte(`"version":1`), []byte(`"version":2`), 1))
	for _, s := range []string{"", "\n", "\n\n", "{}\n", header, header + "\n", header + "{", header + `{"__model__":"StopMessage"}`} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := eventlog.Read(bytes.NewReader(data))
		lines := bytes.Count(data, []byte("\n"))
		if err != nil {
			var le *eventlog.LineError
			if errors.As(err, &le) {
				if le.Line < 1 || le.Line > lines+1 || le.Offset < 0 || le.Offset > int64(len(data)) {
					t.Fatalf("error %v points outside the input (%d lines, %d bytes)", err, lines, len(data))
				}
				if le.Line == 1 && l != nil {
					t.Fatalf("header error %v returned a log", err)
				}
			}
			return
		}
		if l == nil || l.Format != eventlog.Format || (l.Version != eventlog.Version && l.Version != eventlog.ChainedVersion) {
			t.Fatalf("Read succeeded with log %+v", l)
		}
		for i, m := range l.Messages {
			if m == nil {
				t.Fatalf("record %d is nil", i)
			}
			// What the decoder read, the encoder writes back and the
			// decoder reads again to an equal value.
			enc, err := message.Marshal(m)
			if err != nil {
				t.Fatalf("record %d (%s) does not re-encode: %v", i, message.TypeName(m), err)
			}
			again, err := message.UnmarshalMessage(enc)
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("record %d: decode(encode(m)) != m (%v)\n%s", i, err, enc)
			}
		}
		if len(l.Messages) != lines-1 {
			t.Fatalf("%d records from %d complete lines after the header", len(l.Messages), lines-1)
		}
		if torn := data[len(data)-1] != '\n'; torn != (l.Truncated != nil) {
			t.Fatalf("input ends with a newline: %v, but Truncated = %v", !torn, l.Truncated)
		}
		if l.Truncated != nil && !errors.Is(l.Truncated, eventlog.ErrTruncated) {
			t.Fatalf("Truncated = %v, not ErrTruncated", l.Truncated)
		}
	})
}
