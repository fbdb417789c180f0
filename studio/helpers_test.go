package studio

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reply is a model answer: one message to a recipient.
func reply(intent, to, text string) llmtest.Step {
	b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"message_type": intent, "recipient": to, "message": text}}})
	return llmtest.Final(string(b)).WithUsage(1000, 50, 0)
}

// fixture is a small team on the fake model: @Human (the person, a
// HumanProxy) and @Manager (a BaseAgent with the planning tool), served
// by a Studio over httptest.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	team    *orchestrator.Team
	human   *message.Address
	manager *message.Address
	model   *llmtest.Server
	answers chan *agent.AgentMessage
	studio  *Studio
	end     context.CancelFunc // ends the studio's context
	http    *httptest.Server
}

// newFixture builds the team; opt.Person defaults to @Human unless
// readOnly.
func newFixture(t *testing.T, opt Options, readOnly bool, teamOpts ...orchestrator.Option) *fixture {
	t.Helper()
	return buildFixture(t, opt, readOnly, func(*agent.AgentConfig) {}, teamOpts...)
}

// newStreamingFixture is newFixture with @Manager streaming its answers
// (a cut stream is sent again at once).
func newStreamingFixture(t *testing.T, opt Options) *fixture {
	t.Helper()
	return buildFixture(t, opt, false, func(cfg *agent.AgentConfig) {
		cfg.Runtime.Stream = true
		cfg.Runtime.HTTP.BackoffBase = time.Nanosecond
	})
}

func buildFixture(t *testing.T, opt Options, readOnly bool, configure func(*agent.AgentConfig), teamOpts ...orchestrator.Option) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, model: llmtest.NewServer(), answers: make(chan *agent.AgentMessage, 64)}
	t.Cleanup(f.model.Close)
	f.model.Model("@Manager").Otherwise(reply("response", "@Human", "noted"))
	_, team, _ := actortest.NewTeam(t, teamOpts...)
	f.team = team
	var err error
	f.human, err = team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) {
		select {
		case f.answers <- m:
		default:
		}
	}}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.NewConfig("@Manager", "Manager")
	cfg.Model = f.model.ModelConfig("gpt-4.1")
	cfg.Tools = tool.Cards{planning.New()}
	configure(cfg)
	f.manager, err = team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: f.model.HTTPClient()}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The manager attaches its tools on its own goroutine after it
	// started: a call queued behind that, then a barrier, and its tool
	// is in the roster (a test addressing #PlanningTool at once found no
	// such member on a loaded machine).
	if err := proxy.Do(ctx, f.manager, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !readOnly && opt.Person == nil {
		opt.Person = f.human
	}
	sctx, scancel := context.WithCancel(ctx)
	t.Cleanup(scancel)
	f.end = scancel
	f.studio, err = New(sctx, team, opt)
	if err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.studio)
	t.Cleanup(f.http.Close) // after the streams' contexts ended (cleanups run last first)
	return f
}

// say sends text from the person to the manager and waits for the
// manager's answer to the person.
func (f *fixture) say(text string) *agent.AgentMessage {
	f.t.Helper()
	if err := agent.Say(f.ctx, f.human, f.manager, agent.NewRequest(text)); err != nil {
		f.t.Fatal(err)
	}
	return f.answer()
}

// answer waits for the next message to the person, then until the team
// has logged everything so far (a barrier).
func (f *fixture) answer() *agent.AgentMessage {
	f.t.Helper()
	select {
	case m := <-f.answers:
		// The manager's turn is over (a call queues behind it, and the
		// turn's Processed record is emitted before the next mailbox entry
		// runs), then the team has consumed every record so far.
		if err := proxy.Do(f.ctx, f.manager, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
			f.t.Fatal(err)
		}
		f.sync()
		return m
	case <-f.ctx.Done():
		f.t.Fatal("no answer for the person")
		return nil
	}
}

// sync waits until the manager's turn is over and the team has consumed
// every record so far.
func (f *fixture) sync() {
	f.t.Helper()
	if _, err := f.team.Members(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// sse reads a Server-Sent Events stream.
type sse struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

// got is one event: its SSE id and type, and its JSON fields.
type got struct {
	id, typ string
	ev      map[string]any
}

func (g got) k() string { s, _ := g.ev["k"].(string); return s }
func (g got) s(field string) string {
	s, _ := g.ev[field].(string)
	return s
}

// open opens the event stream with the request's extra header h.
func (f *fixture) open(query string, h http.Header) *sse {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, f.http.URL+"/events"+query, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := f.http.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		f.t.Fatalf("GET /events%s: %s: %s", query, resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		f.t.Fatalf("Content-Type %q", ct)
	}
	return &sse{t: f.t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// next reads one event (comments and retry lines skipped).
func (s *sse) next() got {
	s.t.Helper()
	var g got
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		if line == "" && g.ev != nil {
			return g
		}
		g.add(s.t, line)
	}
}

// add reads one line of an event.
func (g *got) add(t *testing.T, line string) {
	t.Helper()
	switch {
	case strings.HasPrefix(line, "id: "):
		g.id = strings.TrimPrefix(line, "id: ")
	case strings.HasPrefix(line, "event: "):
		g.typ = strings.TrimPrefix(line, "event: ")
	case strings.HasPrefix(line, "data: "):
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &g.ev); err != nil {
			t.Fatalf("event data %q: %v", line, err)
		}
	}
}

// parseFrame reads one SSE frame as the studio wrote it.
func parseFrame(t *testing.T, p string) got {
	t.Helper()
	var g got
	for line := range strings.Lines(p) {
		g.add(t, strings.TrimRight(line, "\n"))
	}
	return g
}

// until reads events until one satisfies ok, and returns all read.
func (s *sse) until(ok func(got) bool) []got {
	s.t.Helper()
	var all []got
	for {
		g := s.next()
		all = append(all, g)
		if ok(g) {
			return all
		}
	}
}

// ends checks that the stream ends (the server closes it) with no
// event after the ones read.
func (s *sse) ends() {
	s.t.Helper()
	rest, err := io.ReadAll(s.r)
	if err != nil {
		s.t.Fatalf("reading the stream's end: %v", err)
	}
	if strings.Contains(string(rest), "data:") {
		s.t.Fatalf("events after the team's stop: %q", rest)
	}
}

func kind(k string) func(got) bool { return func(g got) bool { return g.k() == k } }

// ids returns the SSE ids of the record events among gs.
func ids(gs []got) []string {
	var out []string
	for _, g := range gs {
		if g.id != "" {
			out = append(out, g.id)
		}
	}
	return out
}

// post sends body to /api/send with the given content type.
func (f *fixture) post(body, contentType string, h http.Header) (int, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, f.http.URL+"/api/send", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := f.http.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func clipS(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func newReader(resp *http.Response) *bufio.Reader { return bufio.NewReader(resp.Body) }

// postTo posts body as JSON to base's /api/send.
func postTo(t *testing.T, base, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/api/send", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, readAll(resp)
}
