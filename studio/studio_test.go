package studio

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A page opened after the team worked gets the whole history
// (members, the conversation, model calls with tokens and cost, the
// announced commands), a "live" marker, then the records as they happen.
func TestHistoryThenLive(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.say("Plan the work.")

	s := f.open("", nil)
	hist := s.until(kind("live"))
	if hist[0].k() != "hello" || hist[0].ev["reset"] != true || hist[0].s("who") != f.human.AgentID().String() {
		t.Fatalf("first event %v; want hello with reset and the person's id", hist[0].ev)
	}
	var lines []string
	for _, g := range hist {
		switch g.k() {
		case "join":
			lines = append(lines, "join "+g.s("name")+" "+g.s("role"))
		case "msg":
			lines = append(lines, "msg "+g.s("name")+" → "+g.s("toName")+" "+g.s("intent")+": "+g.s("text"))
		case "model":
			lines = append(lines, "model "+g.s("name")+" "+g.s("model"))
			if g.ev["in"] != float64(1000) || g.ev["out"] != float64(50) || g.ev["cost"].(float64) <= 0 {
				t.Errorf("model event %v: want 1000 in, 50 out and a cost", g.ev)
			}
		case "commands":
			if g.s("name") == "@Manager" && !strings.Contains(g.String(), "planning_summary") {
				t.Errorf("the manager's commands %v lack planning_summary", g.ev["cmds"])
			}
			lines = append(lines, "commands "+g.s("name"))
		case "members":
			lines = append(lines, "members "+g.String())
		}
	}
	for _, want := range []string{
		"join @Human Human", "join @Manager Manager", "commands @Manager",
		"msg @Human → @Manager request: Plan the work.",
		"model @Manager gpt-4.1",
		"msg @Manager → @Human response: noted",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("history lacks %q; it has:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if ids := ids(hist); len(ids) == 0 || hist[len(hist)-1].id != "" {
		t.Errorf("record events carry ids (got %d), control events none", len(ids))
	}

	// Live: the next exchange arrives without reconnecting, in order.
	f.say("And now?")
	live := s.until(func(g got) bool { return g.k() == "msg" && g.s("name") == "@Manager" })
	var seq []string
	for _, g := range live {
		if g.k() == "msg" || g.k() == "busy" || g.k() == "idle" {
			seq = append(seq, g.k()+" "+g.s("name"))
		}
	}
	if i := slices.Index(seq, "msg @Human"); i < 0 || !slices.Contains(seq[i:], "busy @Manager") {
		t.Errorf("live events %v: want the person's message, then the manager busy, then its answer", seq)
	}
	for _, id := range ids(live) {
		if slices.Contains(ids(hist), id) {
			t.Errorf("record %s sent twice (in the history and live)", id)
		}
	}
}

// String is the event's JSON-ish form for messages.
func (g got) String() string {
	var b strings.Builder
	for k, v := range g.ev {
		b.WriteString(k + "=")
		b.WriteString(strings.TrimSpace(strings.ReplaceAll(stringOf(v), "\n", " ")))
		b.WriteString(" ")
	}
	return b.String()
}

func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, stringOf(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case map[string]any:
		return got{ev: x}.String()
	}
	return strings.TrimSpace(strings.ReplaceAll(strings.Trim(strings.TrimSpace(toJSON(v)), "\""), "\n", " "))
}

// A reconnecting page (Last-Event-ID, or ?after=) gets exactly
// the records after its last one, then follows; an id the history no
// longer has restarts it from the beginning (reset), saying so; an id
// that is not one is a 400.
func TestReconnectCatchUp(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.say("one")
	first := f.open("", nil).until(kind("live"))
	firstIDs := ids(first)
	f.say("two")
	full := ids(f.open("", nil).until(kind("live")))
	if !slices.Equal(full[:len(firstIDs)], firstIDs) || len(full) <= len(firstIDs) {
		t.Fatalf("the history grew from %d to %d records and must start the same", len(firstIDs), len(full))
	}
	last := firstIDs[len(firstIDs)-1]
	for _, how := range []struct {
		query string
		h     http.Header
	}{{"", http.Header{"Last-Event-Id": {last}}}, {"?after=" + last, nil}} {
		got := f.open(how.query, how.h).until(kind("live"))
		if got[0].k() != "hello" || got[0].ev["reset"] == true {
			t.Fatalf("resume: first event %v; want hello without reset", got[0].ev)
		}
		// The records that followed it, and any the team appended since
		// full was read (a turn's last records may land after say returned).
		want := full[len(firstIDs):]
		if g := ids(got); len(g) < len(want) || !slices.Equal(g[:len(want)], want) {
			t.Errorf("resume after %s sent %d records; want the %d that followed it (and later)", last, len(g), len(want))
		}
	}

	gone := f.open("?after=00000000-0000-0000-0000-000000000001", nil).until(kind("live"))
	if gone[0].ev["reset"] != true || gone[1].k() != "gap" || !strings.Contains(gone[1].s("text"), "no longer in the team's history") {
		t.Errorf("unknown resume point: %v, %v; want a reset and a gap notice", gone[0].ev, gone[1].ev)
	}
	// The whole history: what full had, and any record the team appended
	// since (a turn's last records may land after say returned).
	if g := ids(gone); len(g) < len(full) || !slices.Equal(g[:len(full)], full) {
		t.Errorf("unknown resume point: %d records; want the whole history (%d and later)", len(g), len(full))
	}

	resp, err := f.http.Client().Get(f.http.URL + "/events?after=nope")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(resp)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `?after= is "nope", not an event id`) {
		t.Errorf("bad resume point: %d %q", resp.StatusCode, body)
	}
}

// With the in-memory window exceeded and no Archive, the page
// is told what was left out (ErrOutsideWindow's text), not shown a
// silently shortened history; the roster still lists every member.
func TestHistoryOutsideWindow(t *testing.T) {
	f := newFixture(t, Options{}, false, orchestrator.WithRetention(1))
	for range 600 {
		if err := f.team.Emit(f.ctx, message.NewUserMessage("filler")); err != nil {
			t.Fatal(err)
		}
	}
	f.say("after the filler")
	evs := f.open("", nil).until(kind("live"))
	var gap, members string
	for _, g := range evs {
		switch g.k() {
		case "gap":
			gap = g.s("text")
		case "members":
			members = g.String()
		}
	}
	if !strings.Contains(gap, "left the in-memory window") {
		t.Errorf("gap notice %q; want the window's explanation", gap)
	}
	if !strings.Contains(members, "@Manager") || !strings.Contains(members, "@Human") {
		t.Errorf("members %q; want the roster", members)
	}
}

// blockingWriter is a ResponseWriter whose writes wait, once the "live"
// marker is written, until release is closed: a page that stopped
// reading.
type blockingWriter struct {
	header  http.Header
	mu      sync.Mutex
	buf     strings.Builder
	live    chan struct{}
	release chan struct{}
}

func (w *blockingWriter) Header() http.Header { return w.header }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	wasLive := strings.Contains(w.buf.String(), `"k":"live"`)
	w.mu.Unlock()
	if wasLive {
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !wasLive && strings.Contains(string(p), `"k":"live"`) {
		close(w.live)
	}
	return n, err
}

// A page that falls behind never slows the team: its queue is
// bounded, and when it overflows the page gets what was queued, then a
// "reload" event; catching up from its last event then yields every
// record, none missing.
func TestSlowClientToldToReload(t *testing.T) {
	f := newFixture(t, Options{Buffer: 4}, false)
	w := &blockingWriter{header: http.Header{}, live: make(chan struct{}), release: make(chan struct{})}
	req := httptest.NewRequestWithContext(f.ctx, http.MethodGet, "/events", nil)
	req.RemoteAddr = "127.0.0.1:5555"
	req.Host = "127.0.0.1"
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.studio.ServeHTTP(w, req)
	}()
	<-w.live // the history is written; the page now stops reading
	for _, text := range []string{"one", "two", "three"} {
		f.say(text) // the team goes on: the page's queue overflows
	}
	// The hub is a lossy subscriber with a queue of its own: the answers
	// reached the person before, perhaps, the hub. Sync waits for it.
	if err := f.team.Sync(f.ctx); err != nil {
		t.Fatal(err)
	}
	close(w.release)
	<-done // the handler ended the stream
	out := w.buf.String()
	if !strings.Contains(out, `"k":"reload"`) || !strings.Contains(out, "fell more than 4 events behind") {
		t.Fatalf("the slow page was not told to reload:\n%s", out)
	}
	var before []string
	var last string
	for _, line := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			before = append(before, id)
			last = id
		}
	}
	rest := ids(f.open("?after="+last, nil).until(kind("live")))
	full := ids(f.open("", nil).until(kind("live")))
	if got := append(before, rest...); !slices.Equal(got, full) {
		t.Errorf("before the reload %d records, after it %d: %d in all; want the %d of the history in order", len(before), len(rest), len(got), len(full))
	}
}

// The input box speaks as the person: a message to a member, a
// slash command, and the answer to a question an agent asked the person.
func TestSendAsThePerson(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.model.Model("@Manager").Enqueue(reply("request", "@Human", "Which language?"))
	s := f.open("", nil)
	s.until(kind("live"))

	code, body := f.post(`{"to":"@Manager","text":"Write it."}`, "application/json", nil)
	if code != http.StatusAccepted {
		t.Fatalf("send: %d %s", code, body)
	}
	q := f.answer()
	if q.Type != agent.Request || q.Content != "Which language?" {
		t.Fatalf("the manager's question: %v", q)
	}
	ev := s.until(func(g got) bool { return g.k() == "msg" && g.s("intent") == "request" && g.s("name") == "@Manager" })
	question := ev[len(ev)-1]
	if question.s("mid") != q.ID.String() {
		t.Fatalf("the question's mid %q; want its message id %s", question.s("mid"), q.ID)
	}
	code, body = f.post(`{"answer":"`+question.s("mid")+`","text":"Go, please."}`, "application/json; charset=utf-8", nil)
	if code != http.StatusAccepted {
		t.Fatalf("answer: %d %s", code, body)
	}
	ans := s.until(func(g got) bool { return g.k() == "msg" && g.s("name") == "@Human" && g.s("text") == "Go, please." })
	if a := ans[len(ans)-1]; a.s("intent") != "response" || a.s("parent") != q.ID.String() || a.s("toName") != "@Manager" {
		t.Errorf("the answer %v: want a response to @Manager parented to the question", a.ev)
	}
	f.answer() // the manager's reply to the answer

	code, body = f.post(`{"to":"`+f.manager.AgentID().String()+`","text":"/planning_summary"}`, "application/json", nil)
	if code != http.StatusAccepted {
		t.Fatalf("command: %d %s", code, body)
	}
	if m := f.answer(); m.Sender.Name() != "@Manager" || !strings.Contains(m.Content, "planning") {
		t.Errorf("the command's answer: %q", m.Content)
	}
}

// Bad input is refused with a clear 4xx naming what was wrong,
// and nothing is sent.
func TestBadInput(t *testing.T) {
	f := newFixture(t, Options{}, false)
	before, err := f.team.Messages(f.ctx, orchestrator.Filter{Type: "SentMessage"})
	if err != nil {
		t.Fatal(err)
	}
	json := "application/json"
	for _, c := range []struct {
		name, body, ct string
		h              http.Header
		code           int
		want           string
	}{
		{"form post", `to=@Manager&text=hi`, "application/x-www-form-urlencoded", nil, 415, "must be JSON"},
		{"not JSON", `{"to":`, json, nil, 400, "the body is not a message"},
		{"unknown field", `{"to":"@Manager","txt":"hi"}`, json, nil, 400, `unknown field "txt"`},
		{"empty text", `{"to":"@Manager","text":"  "}`, json, nil, 400, "text is empty"},
		{"no recipient", `{"text":"hi"}`, json, nil, 400, "to is empty"},
		{"unknown member", `{"to":"@Nobody","text":"hi"}`, json, nil, 404, `to is "@Nobody": no member`},
		{"to the person", `{"to":"@Human","text":"hi"}`, json, nil, 400, "the person this page speaks for"},
		{"to a tool", `{"to":"#PlanningTool","text":"hi"}`, json, nil, 400, "a tool actor"},
		{"bad answer id", `{"answer":"x","text":"hi"}`, json, nil, 400, `answer is "x", not a message id`},
		{"unknown question", `{"answer":"00000000-0000-0000-0000-000000000001","text":"hi"}`, json, nil, 404, "no message to the person with that id"},
		{"another site", `{"to":"@Manager","text":"hi"}`, json, http.Header{"Origin": {"https://evil.example"}}, 403, "from another site"},
		{"too large", `{"to":"@Manager","text":"` + strings.Repeat("a", maxInput) + `"}`, json, nil, 413, "larger than"},
		{"two values", `{"to":"@Manager","text":"hi"}{"x":1}`, json, nil, 400, "more than one JSON value"},
	} {
		code, body := f.post(c.body, c.ct, c.h)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %q; want %d naming %q", c.name, code, body, c.code, c.want)
		}
	}
	resp, err := f.http.Client().Get(f.http.URL + "/api/send")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(resp); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" || !strings.Contains(body, "use POST") {
		t.Errorf("GET /api/send: %d %q", resp.StatusCode, body)
	}
	after, err := f.team.Messages(f.ctx, orchestrator.Filter{Type: "SentMessage"})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("refused input sent %d messages", len(after)-len(before))
	}

	ro := newFixture(t, Options{}, true)
	if code, body := ro.post(`{"to":"@Manager","text":"hi"}`, json, nil); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Errorf("read-only studio: %d %q", code, body)
	}
	hello := ro.open("", nil).next()
	if hello.s("who") != "" {
		t.Errorf("read-only studio: hello names a person %q", hello.s("who"))
	}
}

// Loopback requests are served without a token; others need
// the studio's token (query or bearer); without a token configured they
// are refused. A loopback peer addressed by a foreign host name (DNS
// rebinding) is not loopback. The page's code is public.
func TestAuth(t *testing.T) {
	f := newFixture(t, Options{}, false)
	withToken := newFixture(t, Options{Token: "s3cret"}, false)
	for _, c := range []struct {
		name   string
		s      *Studio
		remote string
		host   string
		target string
		h      http.Header
		code   int
		want   string
	}{
		{"loopback", f.studio, "127.0.0.1:1", "127.0.0.1:8080", "/", nil, 200, "akgentic studio"},
		{"loopback v6", f.studio, "[::1]:1", "localhost:8080", "/", nil, 200, "akgentic studio"},
		{"remote, no token configured", f.studio, "192.0.2.1:1", "example.com", "/", nil, 403, "only loopback"},
		{"rebinding", f.studio, "127.0.0.1:1", "evil.example:8080", "/", nil, 403, "only loopback"},
		{"through a proxy", f.studio, "127.0.0.1:1", "127.0.0.1:8080", "/", http.Header{"X-Forwarded-For": {"192.0.2.1"}}, 403, "only loopback"},
		{"through a proxy (RFC 7239)", withToken.studio, "127.0.0.1:1", "127.0.0.1:8080", "/", http.Header{"Forwarded": {"for=192.0.2.1"}}, 401, "a token is required"},
		{"through a proxy, token", withToken.studio, "127.0.0.1:1", "127.0.0.1:8080", "/?token=s3cret", http.Header{"X-Real-Ip": {"192.0.2.1"}}, 200, "akgentic studio"},
		{"remote, no token", withToken.studio, "192.0.2.1:1", "example.com", "/", nil, 401, "a token is required"},
		{"remote, wrong token", withToken.studio, "192.0.2.1:1", "example.com", "/?token=nope", nil, 401, "the token is wrong"},
		{"loopback, wrong token", withToken.studio, "127.0.0.1:1", "localhost", "/?token=nope", nil, 401, "the token is wrong"},
		{"remote, token", withToken.studio, "192.0.2.1:1", "example.com", "/?token=s3cret", nil, 200, "akgentic studio"},
		{"remote, bearer", withToken.studio, "192.0.2.1:1", "example.com", "/", http.Header{"Authorization": {"Bearer s3cret"}}, 200, "akgentic studio"},
		{"remote, input without token", withToken.studio, "192.0.2.1:1", "example.com", "/api/send", nil, 401, "a token is required"},
		{"remote, events without token", withToken.studio, "192.0.2.1:1", "example.com", "/events", nil, 401, "a token is required"},
		{"public code", withToken.studio, "192.0.2.1:1", "example.com", "/app.js", nil, 200, "textContent"},
		{"unknown path", f.studio, "127.0.0.1:1", "localhost", "/nope", nil, 404, "no such page"},
	} {
		req := httptest.NewRequest(http.MethodGet, c.target, nil)
		req.RemoteAddr, req.Host = c.remote, c.host
		for k, v := range c.h {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		c.s.ServeHTTP(rec, req)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %q; want %d with %q", c.name, rec.Code, clipS(rec.Body.String()), c.code, c.want)
		}
		if c.code == 200 && c.target != "/app.js" && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: no Content-Security-Policy", c.name)
		}
	}
}

// The server shuts down with its context: Serve returns, open streams
// end (goleak checks that nothing is left).
func TestServeStopsWithContext(t *testing.T) {
	f := newFixture(t, Options{}, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	served := make(chan error, 1)
	go func() { served <- f.studio.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := &sse{t: t, resp: resp, r: newReader(resp)}
	s.until(kind("live"))
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	// What was written before the shutdown (a board frame may follow
	// "live") is read; then the stream must end.
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, s.r); close(ended) }()
	select {
	case <-ended:
	case <-f.ctx.Done():
		t.Fatal("the stream is still open after the shutdown")
	}
}

// A team that stops tells its pages; a studio made for a stopped team
// serves its history, marked stopped.
func TestTeamStopped(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.say("hello")
	s := f.open("", nil)
	s.until(kind("live"))
	if err := f.team.Stop(f.ctx); err != nil {
		t.Fatal(err)
	}
	evs := s.until(kind("stopped"))
	if !slices.ContainsFunc(evs, kind("stopping")) {
		t.Error("the team's stopping was not shown before its stop")
	}
	s.ends() // nothing more comes: the page is not left reconnecting

	late, err := New(f.ctx, f.team, Options{Person: f.human})
	if err != nil {
		t.Fatalf("New on a stopped team: %v", err)
	}
	ts := httptest.NewServer(late)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ls := &sse{t: t, resp: resp, r: newReader(resp)}
	all := ls.until(kind("stopped"))
	if !slices.ContainsFunc(all, func(g got) bool { return g.k() == "msg" && g.s("text") == "hello" }) {
		t.Error("the stopped team's history lacks the conversation")
	}
	ls.ends()
	if code, body := postTo(t, ts.URL, `{"to":"@Manager","text":"hi"}`); code < 400 || code >= 500 && code != http.StatusGone {
		t.Errorf("sending to a stopped team: %d %q", code, body)
	}
}

// A program that stops its team and then its studio (the demo on
// Ctrl-C) still tells its pages that the team stopped: what was queued
// when the studio ended is written before the stream ends.
func TestStopThenStudioEndTellsThePage(t *testing.T) {
	f := newFixture(t, Options{}, false)
	s := f.open("", nil)
	s.until(kind("live"))
	if err := f.team.Stop(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.end()
	s.until(kind("stopped"))
	s.ends()
}

// Options are checked.
func TestNewRefusesBadOptions(t *testing.T) {
	f := newFixture(t, Options{}, true)
	if _, err := New(f.ctx, nil, Options{}); err == nil || !strings.Contains(err.Error(), "team is nil") {
		t.Errorf("nil team: %v", err)
	}
	if _, err := New(f.ctx, f.team, Options{Buffer: -1}); err == nil || !strings.Contains(err.Error(), "Options.Buffer is -1") {
		t.Errorf("negative buffer: %v", err)
	}
	if _, err := New(f.ctx, f.team, Options{Person: f.manager}); err == nil || !strings.Contains(err.Error(), "@Manager is not a user proxy") {
		t.Errorf("an agent as the person: %v", err)
	}
	other := newFixture(t, Options{}, true)
	if _, err := New(f.ctx, f.team, Options{Person: other.human}); err == nil || !strings.Contains(err.Error(), "is not a member of team") {
		t.Errorf("a person of another team: %v", err)
	}
}

// Model text is data: the page renders it with textContent, never as
// HTML, and the stream carries it as JSON text.
func TestModelTextIsNotHTML(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.model.Model("@Manager").Enqueue(reply("response", "@Human", `<img src=x onerror="alert(1)">`))
	f.say("hi")
	evs := f.open("", nil).until(kind("live"))
	if !slices.ContainsFunc(evs, func(g got) bool { return g.s("text") == `<img src=x onerror="alert(1)">` }) {
		t.Error("the text did not reach the page as it was")
	}
	req := httptest.NewRequest(http.MethodGet, "/app.js", nil)
	rec := httptest.NewRecorder()
	f.studio.ServeHTTP(rec, req)
	if js := rec.Body.String(); strings.Contains(js, "innerHTML") || strings.Contains(js, "insertAdjacentHTML") {
		t.Error("app.js writes HTML")
	}
}

// A tool call is shown with its arguments, its output folded
// under it and its result; the member is "using a tool" until then; the
// planning tool's board reaches the page as it changes, and a page opened
// later gets the latest board.
func TestToolsAndBoard(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "update_planning",
			`{"update":{"create_tasks":[{"id":1,"description":"Write the page","owner":"@Manager"}]}}`)).WithUsage(900, 30, 0),
		reply("response", "@Human", "planned"))
	s := f.open("", nil)
	s.until(kind("live"))
	f.say("Plan it.")
	evs := s.until(func(g got) bool { return g.k() == "msg" && g.s("text") == "planned" })
	var seq []string
	for _, g := range evs {
		switch g.k() {
		case "busy", "idle", "model":
			seq = append(seq, g.k())
		case "tool":
			seq = append(seq, "tool "+g.s("tool")+" "+g.s("call"))
			if !strings.Contains(g.s("text"), `"Write the page"`) {
				t.Errorf("the tool call's arguments %q", g.s("text"))
			}
		case "toolout":
			seq = append(seq, "toolout "+g.s("call")+" "+g.s("text"))
		case "toolret":
			seq = append(seq, "toolret "+g.s("call")+" "+toJSON(g.ev["ok"]))
		case "board":
			seq = append(seq, "board "+stringOf(g.ev["tasks"]))
		}
	}
	want := []string{"busy", "tool update_planning call_1", "model", "toolout call_1 Done", "toolret call_1 true", "model"}
	var i int
	for _, e := range seq {
		if i < len(want) && e == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("events %q; want in order %q", seq, want)
	}
	if !slices.ContainsFunc(seq, func(e string) bool { return strings.HasPrefix(e, "board ") && strings.Contains(e, "Write the page") }) {
		t.Errorf("no board event with the task: %q", seq)
	}

	late := f.open("", nil).until(kind("live"))
	var board string
	for _, g := range late {
		if g.k() == "board" {
			board = stringOf(g.ev["tasks"])
			if g.id != "" {
				t.Errorf("a board event carries the SSE id %s (pages resume from records of the history only)", g.id)
			}
		}
	}
	if !strings.Contains(board, "Write the page") || !strings.Contains(board, "owner=@Manager") {
		t.Errorf("a late page's board: %q", board)
	}
}

// hookedSource runs before, once, when the whole history (Filter.Type
// empty) is first read.
type hookedSource struct {
	source
	before func()
}

func (h *hookedSource) Messages(ctx context.Context, f orchestrator.Filter) ([]message.Message, error) {
	if f.Type == "" && h.before != nil {
		before := h.before
		h.before = nil
		before()
	}
	return h.source.Messages(ctx, f)
}

// A page opened just after the board changed gets that change among the
// records in the log's order: before the answer that followed it. (Read
// apart from the records and placed among them by time, it came after
// that answer whenever both fell in one tick of the records' clock, and a
// page showing an earlier moment missed it.)
func TestBoardChangedWhileThePageOpensStaysInOrder(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "update_planning",
			`{"update":{"create_tasks":[{"id":1,"description":"Write the page"}]}}`)),
		reply("response", "@Human", "planned"))
	f.studio.team = &hookedSource{source: f.studio.team, before: func() { f.say("Plan it.") }}
	evs := f.open("", nil).until(func(g got) bool { return g.k() == "msg" && g.s("text") == "planned" })
	// The board of now, sent first, is a snapshot a page showing an
	// earlier moment skips: the one among the records is wanted.
	board := slices.IndexFunc(evs, func(g got) bool {
		return g.k() == "board" && g.ev["snap"] != true && strings.Contains(stringOf(g.ev["tasks"]), "Write the page")
	})
	if board < 0 {
		t.Errorf("no board with the task before the answer that followed it: %v", evs)
	}
}

// A board whose changes all left the in-memory window (no Archive) is
// still shown: the page gets it from the team's states.
func TestBoardOutsideWindow(t *testing.T) {
	f := newFixture(t, Options{}, false, orchestrator.WithRetention(1))
	f.model.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "update_planning", `{"update":{"create_tasks":[{"id":7,"description":"Survive the window"}]}}`)),
		reply("response", "@Human", "planned"))
	f.say("Plan it.")
	for range 600 {
		if err := f.team.Emit(f.ctx, message.NewUserMessage("filler")); err != nil {
			t.Fatal(err)
		}
	}
	evs := f.open("", nil).until(kind("live"))
	i := slices.IndexFunc(evs, kind("board"))
	if i < 0 || !strings.Contains(stringOf(evs[i].ev["tasks"]), "Survive the window") {
		t.Errorf("the board outside the window: %v", evs)
	}
}

// What each record becomes on the page: core payloads, notes, warnings
// and errors, a board from a decoded (JSON) state, long text cut and
// said so.
func TestRender(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.say("start") // the manager has attached its tools: the board actor exists
	boardActor, err := f.team.Member(f.ctx, "#PlanningTool")
	if err != nil || boardActor == nil {
		t.Fatalf("no board actor: %v", err)
	}
	base := func(from *message.Address) message.Base { return message.Base{Sender: from} }
	sentOf := func(m message.Message) *message.SentMessage {
		return &message.SentMessage{Base: base(f.human), Message: m, Recipient: f.manager}
	}
	warn := &message.WarningMessage{NotificationMessage: message.NotificationMessage{Base: base(f.manager), ContentType: "WarningError", Content: "slow down"}}
	fail := &message.ErrorMessage{NotificationMessage: message.NotificationMessage{Base: base(f.manager), Content: "boom"}}
	ev := func(e any) *message.EventMessage { return &message.EventMessage{Base: base(f.manager), Event: e} }
	long := strings.Repeat("é", maxText)
	for _, c := range []struct {
		m    message.Message
		want string // k and the field that matters; "" = not shown
	}{
		{sentOf(message.NewUserMessage("hi")), "msg user message hi"},
		{sentOf(message.NewResultMessage("42")), "msg result 42"},
		{sentOf(&message.CancelMessage{Reason: "x"}), "msg CancelMessage "},
		{warn, "warn slow down"},
		{fail, "error boom"},
		{ev(llm.CompactedEvent{ReplacedMessageCount: 9, TokensBefore: 900, TokensAfter: 100}), "note history compacted: 9 messages summarized (900 → 100 tokens)"},
		{ev(&llm.ClearedEvent{ClearedMessageCount: 3}), "note history cleared: 3 messages dropped"},
		{ev(message.TeamStoppingEvent{}), "stopping "},
		{ev(llm.MessageEvent{Message: llm.Message{Role: "assistant", Content: "x"}}), ""},
		{ev(struct{ X int }{1}), ""},
		{&message.StateChangedMessage{Base: base(boardActor), State: json.RawMessage(`{"tasks":[{"id":3,"description":"decoded"}]}`)}, "board decoded"},
		{&message.StateChangedMessage{Base: base(boardActor), State: map[string]any{"other": 1}}, ""},
		{&message.StateChangedMessage{Base: base(f.manager), State: json.RawMessage(`{"tasks":[]}`)}, ""},
		{&message.StartMessage{Base: base(boardActor)}, ""},
	} {
		e, ok := render(c.m)
		got := ""
		if ok {
			got = e.K + " " + e.Intent + e.Text
			if e.Intent != "" {
				got = e.K + " " + e.Intent + " " + e.Text
			}
			if len(e.Tasks) > 0 {
				got = e.K + " " + e.Tasks[0].Description
			}
		}
		if got != c.want {
			t.Errorf("%T: %q; want %q", c.m, got, c.want)
		}
	}
	if e, _ := render(ev(llm.UsageEvent{ModelName: "m", InputTokens: 1, Latency: 1500 * time.Millisecond})); e.K != "model" || e.Ms != 1500 {
		t.Errorf("a model call's latency: %+v", e)
	}
	// A turn's start and end name their message (the waterfall's links);
	// a message a running turn consumed says so.
	mid := uuid.New()
	for _, c := range []struct {
		m       message.Message
		k       string
		handled bool
	}{
		{&message.ReceivedMessage{Base: base(f.manager), MessageID: mid}, "busy", false},
		{&message.ProcessedMessage{Base: base(f.manager), MessageID: mid}, "idle", false},
		{&message.HandledMessage{Base: base(f.manager), MessageID: mid}, "idle", true},
	} {
		if e, ok := render(c.m); !ok || e.K != c.k || e.MID != mid.String() || e.Handled != c.handled {
			t.Errorf("%T: %+v; want %s for message %s, handled %v", c.m, e, c.k, mid, c.handled)
		}
	}
	e, _ := render(sentOf(message.NewUserMessage(long)))
	if !strings.HasSuffix(e.Text, "more bytes)") || len(e.Text) > maxText+64 || !utf8.ValidString(e.Text) {
		t.Errorf("a long text is not cut cleanly: %d bytes, ends %q", len(e.Text), e.Text[len(e.Text)-30:])
	}
}
