package eventlog_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// written returns the path of a closed log holding tm's records.
func written(t *testing.T, tm *team) (string, []message.Message) {
	t.Helper()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone, Unchained: true}) // lines edited by the tests
	recs := tm.records()
	for _, r := range recs {
		w.OnMessage(r)
	}
	w.OnStop(tm.id)
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	return path, recs
}

func TestTruncatedLastLineIsSkipped(t *testing.T) {
	tm := newTeam()
	path, recs := written(t, tm)
	size := fileSize(t, path)
	torn := `{"__model__":"UserMessage","id":"` // a write cut short
	appendBytes(t, path, torn)

	l := readLog(t, path)
	sameRecords(t, l.Messages, recs)
	if !errors.Is(l.Truncated, eventlog.ErrTruncated) {
		t.Fatalf("Truncated = %v, want ErrTruncated", l.Truncated)
	}
	le := lineError(t, l.Truncated)
	if le.Line != len(recs)+2 || le.Offset != size || le.Path != path {
		t.Errorf("truncated at %s line %d offset %d, want %s line %d offset %d", le.Path, le.Line, le.Offset, path, len(recs)+2, size)
	}
	msg := le.Error()
	for _, want := range []string{fmt.Sprint("line ", len(recs)+2), fmt.Sprint("byte offset ", size), fmt.Sprint(len(torn), " bytes")} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}

	// A complete JSON object without its newline is still a torn write.
	path2, _ := written(t, newTeam())
	b, _ := message.Marshal(tm.user("whole but unterminated"))
	appendBytes(t, path2, string(b))
	if l := readLog(t, path2); l.Truncated == nil || len(l.Messages) != len(recs) {
		t.Errorf("unterminated last record: Truncated %v, %d records; want it skipped", l.Truncated, len(l.Messages))
	}
}

func TestAppendRepairsTruncatedTail(t *testing.T) {
	tm := newTeam()
	path, recs := written(t, tm)
	size := fileSize(t, path)
	appendBytes(t, path, `{"__model__":"SentMessage","message":{"__mo`)

	var logs logCapture
	w, err := eventlog.Append(path, eventlog.Options{Sync: eventlog.SyncEvery, Logger: logs.logger()})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	defer w.Close()
	if got := fileSize(t, path); got != size {
		t.Errorf("after Append the file has %d bytes, want %d (cut back to the last complete line)", got, size)
	}
	warn := logs.lines("level=WARN")
	if len(warn) != 1 || !strings.Contains(warn[0], fmt.Sprint("offset=", size)) {
		t.Errorf("warnings %q, want one naming offset=%d", warn, size)
	}
	if eventlog.TeamIDOf(w) != tm.id {
		t.Errorf("TeamID %v, want %v from the header", eventlog.TeamIDOf(w), tm.id)
	}
	if s := eventlog.StatsOf(w); s.Syncs != 1 {
		t.Errorf("Stats %+v, want the repair fsynced", s)
	}
	more := []message.Message{tm.user("after restore 1"), tm.user("after restore 2")}
	for _, m := range more {
		w.OnMessage(m)
	}
	w.OnStop(tm.id)
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}

	l := readLog(t, path)
	if l.Truncated != nil {
		t.Errorf("Truncated = %v after the repair", l.Truncated)
	}
	if l.TeamID != tm.id {
		t.Errorf("header team %v, want %v", l.TeamID, tm.id)
	}
	sameRecords(t, l.Messages, append(recs, more...))
}

func TestAppendCleanLog(t *testing.T) {
	tm := newTeam()
	path, recs := written(t, tm)
	var logs logCapture
	w, err := eventlog.Append(path, eventlog.Options{Sync: eventlog.SyncBatch, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	m := tm.user("continued")
	w.OnMessage(m)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s := eventlog.StatsOf(w); s.Syncs != 1 || s.Written != 1 {
		t.Errorf("Stats %+v, want 1 written, 1 sync at Close", s)
	}
	if warn := logs.lines("level=WARN"); len(warn) != 0 {
		t.Errorf("warnings on a clean log: %q", warn)
	}
	sameRecords(t, readLog(t, path).Messages, append(recs, m))
}

func TestAppendHeaderOnlyLogs(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncNone})
	w.OnStop(tm.id)
	size := fileSize(t, path)
	// A torn first record, longer than one backwards read chunk.
	appendBytes(t, path, `{"__model__":"UserMessage","content":"`+strings.Repeat("x", 100_000))
	w2, err := eventlog.Append(path, eventlog.Options{Sync: eventlog.SyncNone, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != size {
		t.Errorf("after Append: %d bytes, want %d (the header alone)", got, size)
	}
	m := tm.user("first")
	w2.OnMessage(m)
	w2.OnStop(tm.id)
	sameRecords(t, readLog(t, path).Messages, []message.Message{m})
}

func TestAppendFailures(t *testing.T) {
	dir := t.TempDir()
	if _, err := eventlog.Append(filepath.Join(dir, "missing.log"), eventlog.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append of a missing file: %v, want fs.ErrNotExist", err)
	}
	for name, content := range map[string]string{
		"empty":      "",
		"torn":       `{"format":"akgentic-eventlog","vers`,
		"not a log":  "hello\nworld\n",
		"v2":         `{"format":"akgentic-eventlog","version":2,"team_id":"7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d"}` + "\n",
		"no newline": strings.Repeat(" ", 70_000),
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".log")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := eventlog.Append(path, eventlog.Options{Logger: discard})
		if le := lineError(t, err); le.Line != 1 || le.Path != path {
			t.Errorf("%s: Append error %v, want one about line 1 of %s", name, err, path)
		}
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Errorf("%s: Append changed a file it refused", name)
		}
	}
}

// header is a valid header line.
const header = `{"format":"akgentic-eventlog","version":1,"team_id":"7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d","created":"2025-03-14T15:09:26.535Z"}` + "\n"

func TestBadHeaders(t *testing.T) {
	record := `{"__model__":"StopMessage","id":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"}` + "\n"
	for _, tc := range []struct {
		name, in string
		kind     error
		says     string
	}{
		{"empty", "", eventlog.ErrBadHeader, "empty"},
		{"not JSON", "hello\n", eventlog.ErrBadHeader, "invalid character"},
		{"record first", record, eventlog.ErrBadHeader, "not an event log"},
		{"other format", `{"format":"jsonl","version":1}` + "\n", eventlog.ErrBadHeader, `"jsonl"`},
		{"no team", `{"format":"akgentic-eventlog","version":1}` + "\n", eventlog.ErrBadHeader, "team_id"},
		{"bad team", `{"format":"akgentic-eventlog","version":1,"team_id":"nope"}` + "\n", eventlog.ErrBadHeader, "UUID"},
		{"version 3", strings.Replace(header, `"version":1`, `"version":3`, 1), eventlog.ErrBadHeader, "unsupported version 3"},
		{"version 2 without a chain", strings.Replace(header, `"version":1`, `"version":2`, 1), eventlog.ErrBadHeader, `version 2 with chain ""`},
		{"version 0", strings.Replace(header, `"version":1,`, ``, 1), eventlog.ErrBadHeader, "unsupported version 0"},
		{"torn header", header[:40], eventlog.ErrBadHeader, "no trailing newline"},
		{"huge first line", strings.Repeat("{", 100_000) + "\n", eventlog.ErrBadHeader, "no newline in the first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := eventlog.Read(strings.NewReader(tc.in))
			if l != nil || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Read = %v, %v; want a %v error saying %q", l, err, tc.kind, tc.says)
			}
			if le := lineError(t, err); le.Line != 1 || le.Offset != 0 || !strings.Contains(err.Error(), "line 1") {
				t.Errorf("error %v does not point at line 1", err)
			}
		})
	}
}

func TestHeaderIgnoresUnknownKeys(t *testing.T) {
	in := strings.Replace(header, `{`, `{"writer":"future",`, 1)
	l, err := eventlog.Read(strings.NewReader(in))
	if err != nil || l.TeamID.String() != "7e3a0c1b-2d4f-4a6b-8c9d-0e1f2a3b4c5d" || len(l.Messages) != 0 {
		t.Fatalf("Read = %+v, %v", l, err)
	}
}

func TestCorruptMiddleLine(t *testing.T) {
	tm := newTeam()
	path, recs := written(t, tm)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	// Damage line 4 (the third record): drop its closing brace.
	offset := int64(len(lines[0]) + len(lines[1]) + len(lines[2]))
	lines[3] = strings.Replace(lines[3], "}\n", "\n", 1)
	corrupt := strings.Join(lines, "")
	if err := os.WriteFile(path, []byte(corrupt), 0o600); err != nil {
		t.Fatal(err)
	}

	l, err := eventlog.ReadFile(path)
	if !errors.Is(err, eventlog.ErrBadRecord) {
		t.Fatalf("ReadFile error %v, want ErrBadRecord", err)
	}
	le := lineError(t, err)
	if le.Line != 4 || le.Offset != offset || le.Path != path {
		t.Errorf("error at %s line %d offset %d, want %s line 4 offset %d", le.Path, le.Line, le.Offset, path, offset)
	}
	if !strings.Contains(err.Error(), path+" line 4 (byte offset ") {
		t.Errorf("error %q does not name the file and line", err)
	}
	if l == nil {
		t.Fatal("no partial log returned with the error")
	}
	sameRecords(t, l.Messages, recs[:2])

	// The same through Read: no path.
	_, err = eventlog.Read(strings.NewReader(corrupt))
	if le := lineError(t, err); le.Line != 4 || le.Path != "" || strings.Contains(err.Error(), path) {
		t.Errorf("Read error %v, want line 4 without a path", err)
	}
}

func TestCompleteBadLastLineIsAnError(t *testing.T) {
	for name, last := range map[string]string{
		"garbage": "not json\n",
		"blank":   "\n",
		"no tag":  `{"id":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"}` + "\n",
		"not msg": `{"__model__":"TeamStoppingEvent"}` + "\n",
	} {
		l, err := eventlog.Read(strings.NewReader(header + last))
		if !errors.Is(err, eventlog.ErrBadRecord) || lineError(t, err).Line != 2 {
			t.Errorf("%s: Read error %v, want ErrBadRecord at line 2", name, err)
		}
		if l == nil || l.Truncated != nil {
			t.Errorf("%s: log %+v, want the header and no truncation", name, l)
		}
	}
}

func TestUnknownTypeTag(t *testing.T) {
	in := header + `{"__model__":"GreetMessage","text":"hi"}` + "\n"
	_, err := eventlog.Read(strings.NewReader(in))
	if !errors.Is(err, message.ErrUnknownType) || !errors.Is(err, eventlog.ErrBadRecord) {
		t.Fatalf("Read error %v, want ErrBadRecord wrapping message.ErrUnknownType", err)
	}
	if !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "GreetMessage") {
		t.Errorf("error %q does not name the line and the type", err)
	}
}

func TestReadAnyChunking(t *testing.T) {
	tm := newTeam()
	path, recs := written(t, tm)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]io.Reader{
		"one byte": iotest.OneByteReader(strings.NewReader(string(data))),
		"half":     iotest.HalfReader(strings.NewReader(string(data))),
		"data+EOF": iotest.DataErrReader(strings.NewReader(string(data))),
	} {
		l, err := eventlog.Read(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameRecords(t, l.Messages, recs)
	}
}

func TestReadErrors(t *testing.T) {
	boom := errors.New("disk gone")
	_, err := eventlog.Read(io.MultiReader(strings.NewReader(header+`{"__model__":"Stop`), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Read error %v, want the reader's error at line 2", err)
	}
	_, err = eventlog.Read(iotest.ErrReader(boom))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("Read error %v, want the reader's error at line 1", err)
	}
	_, err = eventlog.ReadFile(filepath.Join(t.TempDir(), "missing.log"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestTornWriteThenRestore(t *testing.T) {
	tm := newTeam()
	var logs logCapture
	w, path := create(t, tm, eventlog.Options{Sync: eventlog.SyncEvery, Logger: logs.logger()})
	recs := tm.records()
	for _, r := range recs[:5] {
		w.OnMessage(r)
	}
	faults := eventlog.InjectFaults(w)
	full := errors.New("ENOSPC")
	faults.FailWrites(full, true)
	for _, r := range recs[5:] {
		w.OnMessage(r)
	}
	if !errors.Is(w.Err(), full) {
		t.Errorf("Err = %v, want the write error", w.Err())
	}
	if s := eventlog.StatsOf(w); s.Written != 5 || s.Lost != uint64(len(recs)-5) {
		t.Errorf("Stats %+v, want 5 written, %d lost", s, len(recs)-5)
	}
	if writes, _ := faults.Calls(); writes != 1 {
		t.Errorf("%d writes after the failure, want the failing one only", writes)
	}
	w.OnStop(tm.id)

	// The torn half record is reported, the five before it are intact.
	l := readLog(t, path)
	sameRecords(t, l.Messages, recs[:5])
	if le := lineError(t, l.Truncated); le.Line != 7 {
		t.Errorf("truncated line %d, want 7", le.Line)
	}
	// A restore continues the log cleanly.
	w2, err := eventlog.Append(path, eventlog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	w2.SetRestoring(tm.id, true)
	for _, m := range l.Messages {
		w2.OnMessage(m)
	}
	w2.SetRestoring(tm.id, false)
	for _, r := range recs[5:] {
		w2.OnMessage(r)
	}
	w2.OnStop(tm.id)
	if l := readLog(t, path); l.Truncated != nil {
		t.Errorf("Truncated = %v after Append", l.Truncated)
	} else {
		sameRecords(t, l.Messages, recs)
	}
}
