package actortest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// LogCapture keeps every record logged through its Logger (for
// assertions) and writes it to the test's log while the test runs.
type LogCapture struct{ h *captureHandler }

// captureHandler is the slog.Handler behind a LogCapture.
type captureHandler struct {
	t     testing.TB
	mu    *sync.Mutex
	recs  *[]slog.Record
	done  *bool
	attrs []slog.Attr
}

// NewLogCapture returns a capture bound to t; it stops writing to t's log
// when t ends (records are still kept).
func NewLogCapture(t testing.TB) *LogCapture {
	done := false
	h := &captureHandler{t: t, mu: &sync.Mutex{}, recs: &[]slog.Record{}, done: &done}
	t.Cleanup(func() {
		h.mu.Lock()
		*h.done = true
		h.mu.Unlock()
	})
	return &LogCapture{h}
}

// Logger returns a logger writing to the capture.
func (l *LogCapture) Logger() *slog.Logger { return slog.New(l.h) }

// Enabled accepts every level.
func (l *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle records r.
func (l *captureHandler) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(l.attrs...)
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.recs = append(*l.recs, r)
	if !*l.done {
		l.t.Log(format(r))
	}
	return nil
}

// WithAttrs returns a handler adding attrs.
func (l *captureHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *l
	c.attrs = append(append([]slog.Attr(nil), l.attrs...), attrs...)
	return &c
}

// WithGroup is not supported; it returns l.
func (l *captureHandler) WithGroup(string) slog.Handler { return l }

// Records returns the records so far.
func (l *LogCapture) Records() []slog.Record {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return append([]slog.Record(nil), *l.h.recs...)
}

// Count returns how many records at level contain substr in their message
// or attributes.
func (l *LogCapture) Count(level slog.Level, substr string) int {
	n := 0
	for _, r := range l.Records() {
		if r.Level == level && strings.Contains(format(r), substr) {
			n++
		}
	}
	return n
}

// Text returns every record formatted, one per line.
func (l *LogCapture) Text() string {
	var b strings.Builder
	for _, r := range l.Records() {
		b.WriteString(format(r))
		b.WriteByte('\n')
	}
	return b.String()
}

func format(r slog.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	return b.String()
}
