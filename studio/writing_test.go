package studio

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// held is a streamed answer of @Manager that the test holds half-written:
// its first stream is cut after cutAfter chunks (the page has the
// beginning of the text), and the request sent again waits in its Check
// until release. The whole answer is text, sent to the person.
type held struct {
	text    string
	held    chan struct{} // the request sent again has arrived
	release func()
}

func holdAnswer(f *fixture, text string, cutAfter int) *held {
	h := &held{text: text, held: make(chan struct{}, 1)}
	gate := make(chan struct{})
	var once sync.Once
	h.release = func() { once.Do(func() { close(gate) }) }
	f.t.Cleanup(h.release) // before the model server closes: it waits for its requests
	again := reply("response", "@Human", text)
	again.Check = func(*llmtest.Request) error {
		h.held <- struct{}{}
		select {
		case <-gate:
		case <-f.ctx.Done():
		}
		return nil
	}
	f.model.Model("@Manager").Enqueue(reply("response", "@Human", text).CutAfter(cutAfter), again)
	return h
}

// wait waits until the answer is held, then until the studio has every
// delta of its first stream, and returns the text they make.
func (h *held) wait(f *fixture) string {
	f.t.Helper()
	select {
	case <-h.held:
	case <-f.ctx.Done():
		f.t.Fatal("the answer's request was not sent again")
	}
	// The deltas were emitted before the request was sent again: once
	// every subscriber has been given them (Sync, not a query: the log's
	// barrier does not wait for the studio's hub), the hub has them.
	if err := f.team.Sync(f.ctx); err != nil {
		f.t.Fatal(err)
	}
	f.studio.hub.mu.Lock()
	defer f.studio.hub.mu.Unlock()
	a := f.studio.hub.answers[f.manager.AgentID()]
	if a == nil {
		f.t.Fatal("the studio has no answer of @Manager being written")
	}
	text := llm.StreamedText(a.Raw())
	if text == "" || len(text) >= len(h.text) || !strings.HasPrefix(h.text, text) {
		f.t.Fatalf("the held answer's text %q is not a beginning of %q", text, h.text)
	}
	return text
}

// With streaming on, an answer reaches an open page as it is
// written: "writing" events of their own SSE type, without id, carrying
// the text of the messages so far; then the final message as usual, and
// no "writing" after it. The history a new or reconnecting page gets has
// the final message and no "writing" event.
func TestStreamedAnswerIsShownLive(t *testing.T) {
	f := newStreamingFixture(t, Options{})
	s := f.open("", nil)
	hist := s.until(kind("live"))
	lastID := ids(hist)[len(ids(hist))-1]

	const text = "Streamed to the page piece by piece, then sent whole as one message."
	h := holdAnswer(f, text, 8)
	if err := agent.Say(f.ctx, f.human, f.manager, agent.NewRequest("Write it slowly.")); err != nil {
		t.Fatal(err)
	}
	partial := h.wait(f)
	manager := f.manager.AgentID().String()
	isWriting := func(g got) bool { return g.k() == "writing" }
	check := func(g got) {
		t.Helper()
		if g.typ != "writing" || g.id != "" || g.s("who") != manager || g.s("name") != "@Manager" || !strings.HasPrefix(text, g.s("text")) {
			t.Errorf("writing event: type %q, id %q, %v; want type writing, no id, @Manager's text so far", g.typ, g.id, g.ev)
		}
	}
	live := s.until(func(g got) bool { return isWriting(g) && g.s("text") == partial })
	for _, g := range live {
		if isWriting(g) || g.typ != "" {
			check(g)
		}
	}

	h.release()
	final := s.until(func(g got) bool { return g.k() == "msg" && g.s("name") == "@Manager" })
	for _, g := range final[:len(final)-1] {
		if isWriting(g) {
			check(g)
		}
	}
	if got := final[len(final)-1].s("text"); got != text {
		t.Errorf("the final message %q, want %q", got, text)
	}
	for _, g := range s.until(func(g got) bool { return g.k() == "idle" && g.s("who") == manager }) {
		if isWriting(g) {
			t.Errorf("a writing event after the final message: %v", g.ev)
		}
	}

	for _, how := range []struct {
		name string
		h    http.Header
	}{{"a new page", nil}, {"a reconnecting page", http.Header{"Last-Event-Id": {lastID}}}} {
		replay := f.open("", how.h).until(kind("live"))
		var msg bool
		for _, g := range replay {
			if isWriting(g) || g.typ != "" {
				t.Errorf("%s was sent a writing event in the history: %v", how.name, g.ev)
			}
			msg = msg || g.k() == "msg" && g.s("text") == text
		}
		if !msg {
			t.Errorf("%s's history lacks the final message", how.name)
		}
	}
}

// chanWriter is a ResponseWriter that, once the "live" marker is written,
// hands each write to the test (out) and waits until the test takes it: a
// page that reads only when the test says so.
type chanWriter struct {
	ctx    context.Context
	header http.Header
	buf    strings.Builder // until live
	live   chan struct{}
	out    chan string
	isLive bool
}

func (w *chanWriter) Header() http.Header { return w.header }
func (w *chanWriter) WriteHeader(int)     {}
func (w *chanWriter) Flush()              {}
func (w *chanWriter) Write(p []byte) (int, error) {
	if !w.isLive {
		w.buf.Write(p)
		if strings.Contains(string(p), `"k":"live"`) {
			w.isLive = true
			close(w.live)
		}
		return len(p), nil
	}
	select {
	case w.out <- string(p):
		return len(p), nil
	case <-w.ctx.Done():
		return 0, w.ctx.Err()
	}
}

// A page that reads slowly is not flooded by an answer being
// streamed: whatever the number of deltas, it is sent the text so far at
// most once per answer per write it was waiting on (the latest replaces
// the older), and the deltas never count against its queue of records
// (Buffer 8 here, for 24 deltas: no reload); the final message follows.
func TestStreamedAnswerCoalesced(t *testing.T) {
	f := newStreamingFixture(t, Options{Buffer: 8})
	ctx, cancel := context.WithCancel(f.ctx)
	w := &chanWriter{ctx: ctx, header: http.Header{}, live: make(chan struct{}), out: make(chan string)}
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/events", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:5555", "127.0.0.1"
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.studio.ServeHTTP(w, req)
	}()
	defer func() { cancel(); <-done }()
	<-w.live

	const deltas = 24 // the first stream: the role chunk, then 24 pieces of text
	text := "A long answer, streamed in many small pieces while the page does not read: " + strings.Repeat("more words, ", 20) + "the end."
	h := holdAnswer(f, text, 1+deltas)
	if err := agent.Say(f.ctx, f.human, f.manager, agent.NewRequest("Write a lot.")); err != nil {
		t.Fatal(err)
	}
	partial := h.wait(f) // every delta is in; the page has read nothing yet

	read := func(until func(got) bool) []got {
		t.Helper()
		var all []got
		for {
			select {
			case p := <-w.out:
				g := parseFrame(t, p)
				if g.k() == "reload" {
					t.Fatalf("the page was told to reload: %v", g.ev)
				}
				all = append(all, g)
				if until(g) {
					return all
				}
			case <-f.ctx.Done():
				t.Fatalf("the page was not sent what it waited for; it got %d events", len(all))
			}
		}
	}
	var writing []string
	for _, g := range read(func(g got) bool { return g.k() == "writing" && g.s("text") == partial }) {
		if g.k() == "writing" {
			writing = append(writing, g.s("text"))
		}
	}
	if len(writing) > 2 {
		t.Errorf("%d deltas reached a slow page as %d writing events; want at most 2 (the text when it was woken, then the latest): %q", deltas, len(writing), writing)
	}

	h.release()
	final := read(func(g got) bool { return g.k() == "msg" && g.s("name") == "@Manager" })
	if got := final[len(final)-1].s("text"); got != text {
		t.Errorf("the final message %q, want %q", got, text)
	}
}

// The text of a long answer being written keeps its end (what
// is new), cut on a rune boundary.
func TestClipStart(t *testing.T) {
	if got := clipStart("short"); got != "short" {
		t.Errorf("clipStart(short) = %q", got)
	}
	long := strings.Repeat("é", maxText) + "the end" // 2 bytes a rune
	got := clipStart(long)
	if !strings.HasPrefix(got, "… ") || !strings.HasSuffix(got, "the end") || !utf8.ValidString(got) || len(got) > maxText+len("… ") {
		t.Errorf("clipStart of %d bytes: %d bytes, %q…%q", len(long), len(got), got[:8], got[len(got)-8:])
	}
}
