package eventlog_test

import (
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// writtenLog writes the team's records to a new log made with opts and
// returns its lines (newline included; line 1 is the header).
func writtenLog(t *testing.T, tm *team, opts eventlog.Options) (string, []string) {
	t.Helper()
	opts.Sync = eventlog.SyncNone
	w, path := create(t, tm, opts)
	for _, r := range tm.records() {
		w.OnMessage(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.SplitAfter(string(data), "\n")
}

// refused checks that the log of lines is refused with ErrTampered at
// line, saying want.
func refused(t *testing.T, path string, lines []string, line int, want string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := eventlog.ReadFile(path)
	le := lineError(t, err)
	if !errors.Is(err, eventlog.ErrTampered) || le.Line != line || !strings.Contains(err.Error(), want) {
		t.Errorf("ReadFile: %v, want ErrTampered at line %d saying %q", err, line, want)
	}
}

func edit(lines []string, f func([]string) []string) []string {
	return f(append([]string(nil), lines...))
}

func TestChainedLogRefusesEdits(t *testing.T) {
	path, lines := writtenLog(t, newTeam(), eventlog.Options{})
	if l := readLog(t, path); l.Version != eventlog.ChainedVersion || len(l.Messages) != len(lines)-2 {
		t.Fatalf("version %d, %d records", l.Version, len(l.Messages))
	}
	mismatch := "its chain hash does not match"
	for name, c := range map[string]struct {
		edit func([]string) []string
		line int
	}{
		"a record changed":    {func(l []string) []string { l[3] = strings.Replace(l[3], "Greeter", "Gr33ter", 1); return l }, 4},
		"two records swapped": {func(l []string) []string { l[2], l[3] = l[3], l[2]; return l }, 3},
		"a record removed":    {func(l []string) []string { return append(l[:2], l[3:]...) }, 3},
		"a record repeated":   {func(l []string) []string { return append(l[:4], append([]string{l[3]}, l[4:]...)...) }, 5},
		"the header changed":  {func(l []string) []string { l[0] = strings.Replace(l[0], `"created":"`, `"created": "`, 1); return l }, 2},
	} {
		t.Run(name, func(t *testing.T) { refused(t, path, edit(lines, c.edit), c.line, mismatch) })
	}
	// A hash removed, or a line written without one.
	refused(t, path, edit(lines, func(l []string) []string { l[2] = l[2][33:]; return l }), 3, "no chain hash")
}

func TestUnchainedLogRefusesDuplicates(t *testing.T) {
	tm := newTeam()
	path, lines := writtenLog(t, tm, eventlog.Options{Unchained: true})
	if l := readLog(t, path); l.Version != eventlog.Version {
		t.Fatalf("version %d", l.Version)
	}
	// A start record repeated further down (the last one would win).
	refused(t, path, edit(lines, func(l []string) []string { return append(l[:len(l)-1], l[2], "") }), len(lines),
		"is also the id of line 3")
}

func TestAppendContinuesTheChain(t *testing.T) {
	tm := newTeam()
	recs := tm.records()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	for _, r := range recs[:3] {
		w.OnMessage(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := eventlog.Append(path, eventlog.Options{Sync: eventlog.SyncNone, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[3:] {
		w.OnMessage(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l := readLog(t, path)
	sameRecords(t, l.Messages, recs)
	if l.Version != eventlog.ChainedVersion {
		t.Errorf("version %d after Append", l.Version)
	}
}

// endless is a header line followed by a line that never ends.
type endless struct {
	header string
	left   int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.header != "" {
		n := copy(p, e.header)
		e.header = e.header[n:]
		return n, nil
	}
	if e.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), e.left)
	for i := range n {
		p[i] = 'x'
	}
	e.left -= n
	return int(n), nil
}

// A 1 GB line is refused once 16 MiB of it are read, not read whole.
func TestLongLineRefusedWhileReading(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := eventlog.Read(&endless{header: header, left: 1 << 30})
	runtime.ReadMemStats(&after)
	le := lineError(t, err)
	if !errors.Is(err, eventlog.ErrBadRecord) || le.Line != 2 || !strings.Contains(err.Error(), "longer than 16777216 bytes") {
		t.Errorf("Read: %v, want a bad record at line 2, too long", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
		t.Errorf("reading allocated %d MiB", n>>20)
	}
}
