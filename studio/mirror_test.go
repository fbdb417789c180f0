package studio

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A Mirror fed a team's records: a page gets them as its history, with
// the roster and the person derived from them and, past Keep, a gap
// saying how many are not kept; a record added later reaches the open
// page; input goes out through MirrorConfig as the person gives it; End
// tells the page that the team stopped, and its stream ends.
func TestMirrorServesTheRecordsItIsFed(t *testing.T) {
	f := newFixture(t, Options{}, false)
	f.say("hello")
	recs, err := f.team.Messages(f.ctx, orchestrator.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var question uuid.UUID // the manager's answer to the person
	for _, sm := range orchestrator.Select[*message.SentMessage](recs) {
		if sm.Recipient != nil && sm.Recipient.AgentID() == f.human.AgentID() {
			question = sm.Message.Envelope().ID
		}
	}
	sent := make(chan string, 4)
	m, err := NewMirror(f.ctx, f.team.ID(), MirrorConfig{
		Keep: len(recs) - 2,
		Send: func(_ context.Context, to, text string) error { sent <- to + ": " + text; return nil },
		Answer: func(_ context.Context, q uuid.UUID, text string) error {
			sent <- "answer " + q.String() + ": " + text
			return nil
		},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[:len(recs)-1] {
		m.Add(r)
	}
	srv := httptest.NewServer(m)
	defer srv.Close()
	req, _ := http.NewRequestWithContext(f.ctx, http.MethodGet, srv.URL+"/events", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := &sse{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
	hist := s.until(kind("live"))
	var who, gap string
	names := map[string]bool{}
	for _, g := range hist {
		switch g.k() {
		case "hello":
			who = g.s("who")
		case "gap":
			gap = g.s("text")
		case "members":
			for _, x := range g.ev["list"].([]any) {
				names[x.(map[string]any)["name"].(string)] = true
			}
		}
	}
	if who != f.human.AgentID().String() || !names["@Human"] || !names["@Manager"] {
		t.Fatalf("person %q (want @Human's %s), roster %v", who, f.human.AgentID(), names)
	}
	if !strings.Contains(gap, "keeps the team's last") || !strings.Contains(gap, "the 1 before them are not shown") {
		t.Fatalf("gap %q", gap)
	}
	last := recs[len(recs)-1]
	m.Add(last)
	s.until(func(g got) bool { return g.id == last.Envelope().ID.String() })

	if status, body := postTo(t, srv.URL, `{"to":"@Manager","text":"again"}`); status != http.StatusAccepted {
		t.Fatalf("send: %d %s", status, body)
	}
	if status, body := postTo(t, srv.URL, `{"answer":"`+question.String()+`","text":"yes"}`); status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", status, body)
	}
	if status, body := postTo(t, srv.URL, `{"answer":"`+question.String()+`","approve":true}`); status != http.StatusBadRequest {
		t.Fatalf("a decision on a message that asks no approval: %d %s", status, body)
	}
	for _, want := range []string{"@Manager: again", "answer " + question.String() + ": yes"} {
		if got := <-sent; got != want {
			t.Fatalf("input went out as %q, want %q", got, want)
		}
	}
	m.End()
	s.until(kind("stopped"))
	s.ends()
	m.Add(last) // after End: nothing
}

// A Mirror without Send is read-only; without a person in its records
// input is refused with a reason; bad configs are refused.
func TestMirrorRefusesWhatItCannotDo(t *testing.T) {
	ctx := t.Context()
	ro, err := NewMirror(ctx, uuid.New(), MirrorConfig{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ro)
	defer srv.Close()
	if status, body := postTo(t, srv.URL, `{"to":"@A","text":"hi"}`); status != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Fatalf("read-only mirror: %d %s", status, body)
	}
	nobody, err := NewMirror(ctx, uuid.New(), MirrorConfig{Send: func(context.Context, string, string) error { return nil }}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(nobody)
	defer srv2.Close()
	if status, body := postTo(t, srv2.URL, `{"to":"@A","text":"hi"}`); status != http.StatusConflict || !strings.Contains(body, "no person yet") {
		t.Fatalf("a mirror whose records name no person: %d %s", status, body)
	}
	if _, err := NewMirror(ctx, uuid.New(), MirrorConfig{Keep: -1}, Options{}); err == nil || !strings.Contains(err.Error(), "Keep is -1") {
		t.Fatalf("Keep -1: %v", err)
	}
	if _, err := NewMirror(ctx, uuid.New(), MirrorConfig{}, Options{Person: &message.Address{}}); err == nil || !strings.Contains(err.Error(), "Options.Person is set") {
		t.Fatalf("Person set: %v", err)
	}
}

// TestMirrorShowsTheCatalogItsRecordsHold: a team's catalog comes with
// its records (orchestrator.CatalogChanged), so a mirrored page's member
// panel has the cards, as a local team's has.
func TestMirrorShowsTheCatalogItsRecordsHold(t *testing.T) {
	ctx := actortest.Context(t)
	m, err := NewMirror(ctx, uuid.New(), MirrorConfig{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: "reviews code", Skills: []string{"review"}, Config: agent.NewConfig("@Reviewer", "Reviewer")})
	if err != nil {
		t.Fatal(err)
	}
	m.Add(&orchestrator.CatalogChanged{Cards: []*orchestrator.AgentCard{card}})
	srv := httptest.NewServer(m)
	defer srv.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := &sse{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
	cards := s.until(kind("cards"))
	got := fmt.Sprint(cards[len(cards)-1].ev["cards"])
	if !strings.Contains(got, "Reviewer") || !strings.Contains(got, "reviews code") {
		t.Fatalf("the cards event: %s; want the Reviewer card", got)
	}
}

// reviewerCard is a valid card of role role, for the catalog tests.
func reviewerCard(t *testing.T, role, desc string) *orchestrator.AgentCard {
	t.Helper()
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: desc, Skills: []string{"review"}, Config: agent.NewConfig("@"+role, role)})
	if err != nil {
		t.Fatal(err)
	}
	return card
}

// A catalog change that comes after a page opened (a later
// CatalogChanged) is pushed to the page as a cards event holding the
// whole catalog: on a mirror's page and on a local team's.
func TestCatalogChangedLaterIsPushedToAnOpenPage(t *testing.T) {
	ctx := actortest.Context(t)
	m, err := NewMirror(ctx, uuid.New(), MirrorConfig{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Add(&orchestrator.CatalogChanged{Cards: []*orchestrator.AgentCard{reviewerCard(t, "Reviewer", "reviews code")}})
	_, s := openMirror(t, ctx, m)
	s.until(kind("live"))
	m.Add(&orchestrator.CatalogChanged{Cards: []*orchestrator.AgentCard{reviewerCard(t, "Reviewer", "reviews code"), reviewerCard(t, "Tester", "tests code")}})
	evs := s.until(kind("cards"))
	got := fmt.Sprint(evs[len(evs)-1].ev["cards"])
	if !strings.Contains(got, "Reviewer") || !strings.Contains(got, "tests code") {
		t.Fatalf("the mirror's page after a later catalog change: %s; want the Reviewer and Tester cards", got)
	}

	f := newFixture(t, Options{}, true)
	ls := f.open("", nil)
	ls.until(kind("live"))
	if err := f.team.Register(f.ctx, reviewerCard(t, "Tester", "tests code")); err != nil {
		t.Fatal(err)
	}
	evs = ls.until(kind("cards"))
	got = fmt.Sprint(evs[len(evs)-1].ev["cards"])
	if !strings.Contains(got, "Tester") || !strings.Contains(got, "tests code") {
		t.Fatalf("a local team's page after Register: %s; want the Tester card", got)
	}
}
