package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/studio"
)

func TestMain(m *testing.M) {
	actortest.Timeout = 30 * time.Second // waits on NATS under -race on a loaded machine
	goleak.VerifyTestMain(m)
}

// answer is a model answer: one message to a recipient.
func answer(to, text string) llmtest.Step {
	b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"message_type": "response", "recipient": to, "message": text}}})
	return llmtest.Final(string(b)).WithUsage(100, 10, 0)
}

// fleet is an embedded cluster with one worker serving two templates,
// "assistant" (@Human and @Assistant) and "reviewer" (@Human and
// @Reviewer), each agent on the scripted model, and the console over
// httptest.
type fleet struct {
	t       *testing.T
	ctx     context.Context
	model   *llmtest.Server
	client  *cluster.Client
	console *Console
	http    *httptest.Server
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	return newFleetWith(t, func(*Console) {})
}

// newFleetWith is newFleet with the console configured by set before it
// serves.
func newFleetWith(t *testing.T, set func(*Console)) *fleet {
	t.Helper()
	ctx := actortest.Context(t)
	srv, err := cluster.RunEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	closed := make(chan struct{})
	nc, err := nats.Connect(srv.URL(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); <-closed })
	f := &fleet{t: t, ctx: ctx, model: llmtest.NewServer()}
	t.Cleanup(f.model.Close)
	f.model.Model("@Assistant").Otherwise(answer("@Human", "noted"))
	f.model.Model("@Reviewer").Otherwise(answer("@Human", "reviewed"))
	sys := actor.NewSystem(actor.SystemConfig{})
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	env := &agent.Env{HTTPClient: f.model.HTTPClient()}
	tmpl := func(name, role string) cluster.Template {
		return cluster.Template{Person: "@Human", Build: func(ctx context.Context, team *orchestrator.Team, _ json.RawMessage) error {
			if _, err := team.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"}); err != nil {
				return err
			}
			cfg := agent.NewConfig(name, role)
			cfg.Model = f.model.ModelConfig("gpt-4.1")
			_, err := team.Spawn(ctx, &agent.BaseAgent{Env: env}, cfg)
			return err
		}}
	}
	w, err := cluster.StartWorker(ctx, nc, sys, cluster.Config{Owner: "worker-1"}, map[string]cluster.Template{
		"assistant": tmpl("@Assistant", "Assistant"),
		"reviewer":  tmpl("@Reviewer", "Reviewer"),
	}, agent.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Close(cctx); err != nil {
			t.Errorf("worker close: %v", err)
		}
	})
	if f.client, err = cluster.NewClient(ctx, nc, cluster.Config{}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if f.console, err = New(cctx, f.client, studio.Options{}); err != nil {
		t.Fatal(err)
	}
	set(f.console)
	f.http = httptest.NewServer(f.console)
	t.Cleanup(f.http.Close) // after the console's context ended (cleanups run last first)
	return f
}

// create makes a team from template, and waits until the stream holds
// the Start records of its person and its agent (a page opened then
// has them in its history).
func (f *fleet) create(template string) uuid.UUID {
	f.t.Helper()
	id, err := f.client.Create(f.ctx, template, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	joined := 0
	for rec, err := range f.client.Watch(ctx, id, 0) {
		if err != nil {
			f.t.Fatal(err)
		}
		if s, ok := rec.(*message.StartMessage); ok && s.Sender != nil && strings.HasPrefix(s.Sender.Name(), "@") {
			if joined++; joined == 2 {
				return id
			}
		}
	}
	f.t.Fatalf("team %s: the watch ended before its members joined", id)
	return id
}

// get returns the status and body of GET path.
func (f *fleet) get(path string) (int, string) {
	f.t.Helper()
	resp, err := f.http.Client().Get(f.http.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends body as JSON to path.
func (f *fleet) post(path, body string) (int, string) {
	f.t.Helper()
	resp, err := f.http.Client().Post(f.http.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stream is an open event stream of a team page.
type stream struct {
	t    *testing.T
	body io.Closer
	r    *bufio.Reader
}

func (f *fleet) open(team uuid.UUID) *stream {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, f.http.URL+"/teams/"+team.String()+"/events", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := f.http.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f.t.Fatalf("GET events of %s: %s: %s", team, resp.Status, b)
	}
	s := &stream{t: f.t, body: resp.Body, r: bufio.NewReader(resp.Body)}
	f.t.Cleanup(s.close)
	return s
}

func (s *stream) close() { s.body.Close() }

// until reads events (their JSON) until one satisfies ok, and returns
// all read; io.EOF (the stream ended) fails the test.
func (s *stream) until(ok func(map[string]any) bool) []map[string]any {
	s.t.Helper()
	var all []map[string]any
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("the stream ended (%v) after %d events: %v", err, len(all), all)
		}
		data, found := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !found {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			s.t.Fatalf("event %q: %v", data, err)
		}
		all = append(all, ev)
		if ok(ev) {
			return all
		}
	}
}

// ends reads the stream to its end.
func (s *stream) ends() {
	s.t.Helper()
	if _, err := io.ReadAll(s.r); err != nil {
		s.t.Fatalf("reading the stream's end: %v", err)
	}
}

func kind(k string) func(map[string]any) bool {
	return func(ev map[string]any) bool { return ev["k"] == k }
}

// says is an event that is a message from name with text.
func says(name, text string) func(map[string]any) bool {
	return func(ev map[string]any) bool { return ev["k"] == "msg" && ev["name"] == name && ev["text"] == text }
}

// followers is how many teams the console follows now.
func (f *fleet) followers() int {
	f.console.mu.Lock()
	defer f.console.mu.Unlock()
	return len(f.console.teams)
}

// A team's page over the cluster: its history from the team's records
// (hello naming the person, the members), then live; a message typed
// in the page goes through the team's inbox to its member, whose answer
// to the person comes back on the page.
func TestTeamPageFollowsTheClustersRecordsAndSendsInput(t *testing.T) {
	f := newFleet(t)
	id := f.create("assistant")
	s := f.open(id)
	hist := s.until(kind("live"))
	var person string
	members := map[string]bool{}
	for _, ev := range hist {
		switch ev["k"] {
		case "hello":
			person, _ = ev["who"].(string)
			if ev["team"] != id.String() {
				t.Fatalf("hello names team %v, want %s", ev["team"], id)
			}
		case "join":
			members[ev["name"].(string)] = true
		}
	}
	if person == "" || !members["@Human"] || !members["@Assistant"] {
		t.Fatalf("history: person %q, members %v; want the person named and @Human and @Assistant joined (%v)", person, members, hist)
	}
	if status, body := f.post("/teams/"+id.String()+"/api/send", `{"to":"@Assistant","text":"hello from the page"}`); status != http.StatusAccepted {
		t.Fatalf("send: %d %s", status, body)
	}
	s.until(says("@Human", "hello from the page"))
	got := s.until(says("@Assistant", "noted"))
	if last := got[len(got)-1]; last["to"] != person {
		t.Fatalf("the answer went to %v, want the person %s", last["to"], person)
	}
	if n := f.followers(); n != 1 {
		t.Fatalf("%d teams followed with one page open, want 1", n)
	}
}

// One watch per open team page: two pages of a team share it, and it
// ends (the records it kept dropped) once neither is open.
func TestOneWatchPerOpenTeamEndedWhenNoPageIsOpen(t *testing.T) {
	f := newFleet(t)
	id := f.create("assistant")
	a, b := f.open(id), f.open(id)
	a.until(kind("live"))
	b.until(kind("live"))
	f.console.mu.Lock()
	fw := f.console.teams[id]
	users, n := 0, len(f.console.teams)
	if fw != nil {
		users = fw.users
	}
	f.console.mu.Unlock()
	if n != 1 || users != 2 {
		t.Fatalf("two pages of one team: %d teams followed, %d users; want 1 and 2", n, users)
	}
	a.close()
	b.close()
	select {
	case <-fw.done:
	case <-f.ctx.Done():
		t.Fatal("the watch did not end once no page was open")
	}
	if n := f.followers(); n != 0 {
		t.Fatalf("%d teams followed once no page is open, want 0", n)
	}
}

// The list: each team with its template, owner and state (active, then
// stopped once stopped), and a link to its page; a stopped team's page
// shows its records, then that it stopped, and its stream ends.
func TestListShowsTheTeamsAndAStoppedTeamsPageEnds(t *testing.T) {
	f := newFleet(t)
	a, r := f.create("assistant"), f.create("reviewer")
	if _, err := f.client.Send(f.ctx, r, "@Reviewer", "please review"); err != nil {
		t.Fatal(err)
	}
	status, body := f.get("/")
	if status != http.StatusOK {
		t.Fatalf("GET /: %d %s", status, body)
	}
	for _, want := range []string{`href="teams/` + a.String() + `/"`, `href="teams/` + r.String() + `/"`,
		`<td class="template">assistant</td>`, `<td class="template">reviewer</td>`, `<td class="owner">worker-1</td>`, `<td class="state">active</td>`} {
		if !strings.Contains(body, want) {
			t.Fatalf("the list lacks %q:\n%s", want, body)
		}
	}
	if err := f.client.Stop(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	_, body = f.get("/")
	if !strings.Contains(body, `<td class="state">stopped</td>`) {
		t.Fatalf("the list after a stop:\n%s", body)
	}
	// The page of the stopped team: its records, then stopped, then the
	// end of the stream.
	s := f.open(a)
	evs := s.until(kind("stopped"))
	if !slicesContain(evs, kind("join")) {
		t.Fatalf("the stopped team's page has no member joining: %v", evs)
	}
	s.ends()
}

func slicesContain(evs []map[string]any, ok func(map[string]any) bool) bool {
	for _, ev := range evs {
		if ok(ev) {
			return true
		}
	}
	return false
}

// Bad requests get a clear refusal: an unknown team, a path that is no
// team, a request from another host without the token.
func TestConsoleRefusesWhatIsNoTeam(t *testing.T) {
	f := newFleet(t)
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/teams/" + uuid.NewString() + "/events", http.StatusNotFound, "no such team"},
		{"/teams/nope/", http.StatusNotFound, "not a team id"},
		{"/elsewhere", http.StatusNotFound, "no such page"},
		{"/?page=0", http.StatusBadRequest, `?page= is "0", not a page number`},
		{"/teams.json?page=x", http.StatusBadRequest, `?page= is "x", not a page number`},
	} {
		status, body := f.get(c.path)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q; want %d and %q", c.path, status, body, c.status, c.want)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	req.RemoteAddr = "203.0.113.9:1234"
	rec := httptest.NewRecorder()
	f.console.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusForbidden {
		t.Errorf("a request from another host without the token: %d %s", rec.Code, rec.Body)
	}
	if f.followers() != 0 {
		t.Errorf("%d teams followed after refusals, want 0", f.followers())
	}
	if _, err := New(f.ctx, nil, studio.Options{}); err == nil || !strings.Contains(err.Error(), "client is nil") {
		t.Errorf("New(nil client): %v", err)
	}
	const want = "fleet: New: studio.Options.Person is set, but must be nil: each team's page speaks as the person its records name"
	if _, err := New(f.ctx, f.client, studio.Options{Person: &message.Address{}}); err == nil || err.Error() != want {
		t.Errorf("New with a Person: %v; want %q", err, want)
	}
}

// The list is a page of teams at a time, in a stable order (the running
// first), with links to the pages before and after, as HTML and as JSON;
// only the shown teams' last records are read (one each per load), and a
// page past the last is the last.
func TestListIsPagedAndReadsOnlyTheShownTeamsLastRecords(t *testing.T) {
	var reads atomic.Int32
	f := newFleetWith(t, func(c *Console) {
		c.pageSize = 1
		read := c.lastRecord
		c.lastRecord = func(ctx context.Context, id uuid.UUID) (uint64, time.Time, error) {
			reads.Add(1)
			return read(ctx, id)
		}
	})
	a, r := f.create("assistant"), f.create("reviewer")
	if err := f.client.Stop(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	page := func(n int) listing {
		t.Helper()
		reads.Store(0)
		status, body := f.get("/teams.json?page=" + strconv.Itoa(n))
		if status != http.StatusOK {
			t.Fatalf("GET teams.json page %d: %d %s", n, status, body)
		}
		var l listing
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatalf("teams.json: %v: %s", err, body)
		}
		if got := reads.Load(); got != int32(len(l.Teams)) {
			t.Fatalf("page %d: %d last records read for %d teams shown", n, got, len(l.Teams))
		}
		return l
	}
	first, second, past := page(1), page(2), page(3)
	if len(first.Teams) != 1 || first.Teams[0].ID != r.String() || first.Teams[0].State != "active" || first.Pages != 2 || first.Total != 2 || first.Prev != "" || first.Next != "?page=2" {
		t.Fatalf("page 1: %+v; want the running reviewer team, 1 of 2, a next link", first)
	}
	if len(second.Teams) != 1 || second.Teams[0].ID != a.String() || second.Teams[0].State != "stopped" || second.Prev != "?page=1" || second.Next != "" {
		t.Fatalf("page 2: %+v; want the stopped assistant team, a previous link", second)
	}
	if past.Page != 2 || len(past.Teams) != 1 || past.Teams[0].ID != a.String() {
		t.Fatalf("page 3 of 2: %+v; want the last", past)
	}
	reads.Store(0)
	status, body := f.get("/?page=1")
	if status != http.StatusOK || strings.Count(body, "<tr data-team=") != 1 || !strings.Contains(body, `<a id="next" href="?page=2">`) ||
		!strings.Contains(body, "page 1 of 2 · 2 teams") || !strings.Contains(body, `<script src="fleet.js"></script>`) || reads.Load() != 1 {
		t.Fatalf("GET /?page=1 (%d last records read): %d\n%s", reads.Load(), status, body)
	}
	status, body = f.get("/fleet.js")
	if status != http.StatusOK || !strings.Contains(body, "teams.json") {
		t.Fatalf("GET /fleet.js: %d %.200s", status, body)
	}
}

// TestRecentIDsTellsARecordAddedAlready: a watch followed again after a
// failure may yield records the page has; the ring of recent ids skips
// them, and forgets the oldest once full.
func TestRecentIDsTellsARecordAddedAlready(t *testing.T) {
	var r recentIDs
	first := uuid.New()
	if !r.add(first) || r.add(first) {
		t.Fatal("a new id was not new, or an id added was new again")
	}
	for range len(r.ids) {
		r.add(uuid.New())
	}
	if !r.add(first) {
		t.Fatal("the oldest id was not forgotten once the ring was full")
	}
}
