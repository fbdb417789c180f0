package studio

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/internal/browsertest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// history is the fixture team's records after one exchange, in order.
func (f *fixture) history() []message.Message {
	f.t.Helper()
	f.say("hello")
	recs, err := f.team.Messages(f.ctx, orchestrator.Filter{})
	if err != nil {
		f.t.Fatal(err)
	}
	return recs
}

// restarts are the Start records a restore of the team writes again:
// each shown member's, later, in the reverse order of their joining.
func restarts(recs []message.Message) []message.Message {
	var out []message.Message
	at := recs[len(recs)-1].Envelope().Timestamp
	for _, s := range orchestrator.Select[*message.StartMessage](recs) {
		if !shown(s.Sender) {
			continue
		}
		again := &message.StartMessage{Config: s.Config, Parent: s.Parent}
		b := again.Envelope()
		b.ID, b.TeamID, b.Sender = uuid.New(), s.TeamID, s.Sender
		at = at.Add(time.Millisecond)
		b.Timestamp = at
		out = append([]message.Message{again}, out...)
	}
	return out
}

// openMirror serves m over httptest and opens its event stream.
func openMirror(t *testing.T, ctx context.Context, m *Mirror) (*httptest.Server, *sse) {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return srv, &sse{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// A page opened before the person's record came (a cluster team's page
// opened right after its creation): its hello names nobody, then the
// person is told as its record arrives, and input works at once.
func TestMirrorTellsAnOpenPageThePersonWhenItsRecordComes(t *testing.T) {
	f := newFixture(t, Options{}, true)
	recs := f.history()
	sent := make(chan string, 1)
	m, err := NewMirror(f.ctx, f.team.ID(), MirrorConfig{Send: func(_ context.Context, to, text string) error { sent <- to + ": " + text; return nil }}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, s := openMirror(t, f.ctx, m)
	for _, g := range s.until(kind("live")) {
		if g.k() == "hello" && g.s("who") != "" {
			t.Fatalf("hello names the person %q before any record", g.s("who"))
		}
	}
	for _, r := range recs {
		m.Add(r)
	}
	last := recs[len(recs)-1].Envelope().ID.String()
	person := ""
	for _, g := range s.until(func(g got) bool { return g.id == last }) {
		if g.k() == "person" {
			person = g.s("who")
		}
	}
	if person != f.human.AgentID().String() {
		t.Fatalf("the page was told the person %q, want @Human's %s", person, f.human.AgentID())
	}
	if status, body := postTo(t, srv.URL, `{"to":"@Manager","text":"hi"}`); status != http.StatusAccepted {
		t.Fatalf("send after the person came: %d %s", status, body)
	}
	if got := <-sent; got != "@Manager: hi" {
		t.Fatalf("sent %q", got)
	}
}

// The Start records a restore writes again (a cluster team taken over by
// another worker) keep each member's place in the roster: no member is
// listed twice, none moves.
func TestMirrorRosterKeepsARestoredMembersPlace(t *testing.T) {
	f := newFixture(t, Options{}, true)
	recs := f.history()
	m, err := NewMirror(f.ctx, f.team.ID(), MirrorConfig{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(recs, restarts(recs)...) {
		m.Add(r)
	}
	ms, _ := m.t.Members(f.ctx)
	var names []string
	for _, a := range ms {
		if shown(a) {
			names = append(names, a.Name())
		}
	}
	if got := strings.Join(names, " "); got != "@Human @Manager" {
		t.Fatalf("the roster after the restore: %q, want @Human @Manager", got)
	}
}

// The history is written in the log's order, the state changes in their
// places, even where that is not the order of their times (a restored
// team's new records come before its older log): the time slider counts
// records in that order. A board of a tool decoded from a log (no tool
// flag, its role kept) is shown.
func TestHistoryKeepsTheLogsOrderAndShowsDecodedBoards(t *testing.T) {
	team := uuid.New()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	addr := func(name, role string) *message.Address { // as decoded from a log: no tool flag
		return message.NewSnapshotAddress(message.Identity{AgentID: uuid.New(), Name: name, Role: role, TeamID: team})
	}
	human, tool := addr("@Human", "Human"), addr("#PlanningTool", "ToolActor")
	msg := func(sec int, text string) message.Message {
		m := &message.SentMessage{Message: message.NewUserMessage(text), Recipient: human}
		b := m.Envelope()
		b.ID, b.Sender, b.Timestamp = uuid.New(), human, t0.Add(time.Duration(sec)*time.Second)
		return m
	}
	state := func(sec int, desc string) message.Message {
		m := &message.StateChangedMessage{State: &planning.Board{Tasks: []planning.Task{{ID: 1, Description: desc}}}}
		b := m.Envelope()
		b.ID, b.Sender, b.Timestamp = uuid.New(), tool, t0.Add(time.Duration(sec)*time.Second)
		return m
	}
	hist := []message.Message{msg(100, "restored"), msg(1, "first"), state(2, "after first"), msg(3, "second"),
		state(4, "after second"), msg(5, "third"), state(101, "as restored")}
	rec := httptest.NewRecorder()
	st := &stream{w: rec, rc: http.NewResponseController(rec), writeTimeout: time.Second}
	writeHistory(st, hist, 0)
	var order []string
	for frame := range strings.SplitSeq(rec.Body.String(), "\n\n") {
		if frame == "" {
			continue
		}
		g := parseFrame(t, frame)
		switch g.k() {
		case "msg":
			order = append(order, g.s("text"))
		case "board":
			order = append(order, g.ev["tasks"].([]any)[0].(map[string]any)["description"].(string))
		}
	}
	want := "restored, first, after first, second, after second, third, as restored"
	if got := strings.Join(order, ", "); got != want {
		t.Fatalf("the history's order:\n got %s\nwant %s", got, want)
	}
}

// In a real browser, a page of a team restored (its members' Start
// records written again, as a restore or a takeover does) shows each
// member joining once and restored once, one row each; the page, opened
// before any record, learns the person when its record comes, and its
// input box works then.
func TestRestoredMembersShownOnceAndPersonLearntInBrowser(t *testing.T) {
	f := newFixture(t, Options{}, true)
	recs := f.history()
	sent := make(chan string, 1)
	m, err := NewMirror(f.ctx, f.team.ID(), MirrorConfig{Send: func(_ context.Context, to, text string) error { sent <- to + ": " + text; return nil }}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
	defer cancel()
	bctx := browsertest.Open(t, ctx, "the restored members' browser test")
	shows, step := browsertest.Shows, browsertest.Stepper(t, bctx, nil)
	step("open the page before any record", chromedp.Navigate(srv.URL+"/"), shows("#conn", "live"), shows("#hint", "read-only"))
	for _, r := range append(recs, restarts(recs)...) {
		m.Add(r)
	}
	step("the members, restored",
		shows("#feed", "@Manager (Manager) restored"),
		shows("#feed", "@Human (Human) restored"),
		chromedp.Poll[chromedp.Void](`!document.getElementById("text").disabled`, chromedp.WithPollingTimeout(20*time.Second)))
	feed, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("feed").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"@Human (Human)", "@Manager (Manager)"} {
		if n := strings.Count(feed, who+" joined the team"); n != 1 {
			t.Errorf("%s joined %d times in the feed, want once:\n%s", who, n, feed)
		}
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#members li").length`))
	if err != nil || rows != 2 {
		t.Errorf("%d member rows (%v), want 2", rows, err)
	}
	step("send as the person learnt",
		chromedp.SendKeys(chromedp.CSS("#text"), "hi"),
		chromedp.Click(chromedp.CSS("#send")),
		shows("#hint", "sent"))
	if got := <-sent; got != "@Manager: hi" {
		t.Fatalf("sent %q", got)
	}
}
