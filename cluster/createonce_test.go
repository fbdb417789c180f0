package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// gatedBuild is a counters Build that says when it begins (began) and
// waits for release to be closed before it hires.
type gatedBuild struct {
	began   chan struct{}
	release chan struct{}
}

func newGatedBuild() *gatedBuild {
	return &gatedBuild{began: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gatedBuild) build(ctx context.Context, t *orchestrator.Team, params json.RawMessage) error {
	g.began <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return hireCounters(ctx, t, params)
}

// startCreators starts n workers serving the "gated" template (Build
// g.build) and the counters ones, each on its own connection and system,
// with a lease as long as a test's wait (a create is bounded by a lease,
// and a gated one waits for the test), closed when the test ends.
func startCreators(t *testing.T, ctx context.Context, e *Embedded, n int, g *gatedBuild) []*Worker {
	t.Helper()
	tmpls := map[string]Template{"gated": {Person: "@Human", Build: g.build}}
	for name, tm := range counters {
		tmpls[name] = tm
	}
	var ws []*Worker
	for i := range n {
		cfg := Config{Logger: discard, Lease: testTimeout, Owner: "creator-" + string(rune('a'+i))}
		w, err := StartWorker(ctx, connect(t, e).Conn, system(t), cfg, tmpls)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := w.Close(context.Background()); err != nil {
				t.Error(err)
			}
		})
		ws = append(ws, w)
	}
	return ws
}

// teamIDs lists the ids of the teams the leases bucket knows.
func teamIDs(t *testing.T, ctx context.Context, c *Client) []uuid.UUID {
	t.Helper()
	teams, err := c.Teams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []uuid.UUID
	for _, ti := range teams {
		out = append(out, ti.ID)
	}
	return out
}

// Concurrent CreateOnce calls with one key, spread over two workers, make
// one team: while its Build is held, every call but the one whose worker
// makes it returns its id, and no second Build begins; once it is built,
// that call returns the same id too.
func TestCreateOnceConcurrentMakesOneTeam(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	g := newGatedBuild()
	startCreators(t, ctx, e, 2, g)
	c := client(t, ctx, connect(t, e))
	const calls = 8
	type result struct {
		id  uuid.UUID
		err error
	}
	results := make(chan result, calls)
	for range calls {
		go func() {
			id, err := c.CreateOnce(ctx, "order-1", "gated", nil)
			results <- result{id, err}
		}()
	}
	<-g.began
	var ids []uuid.UUID
	for range calls - 1 { // all but the builder's, while it is held
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatal(r.err)
			}
			ids = append(ids, r.id)
		case <-ctx.Done():
			t.Fatalf("%d of %d calls returned while the team was built; want %d", len(ids), calls, calls-1)
		}
	}
	close(g.release)
	r := <-results
	if r.err != nil {
		t.Fatal(r.err)
	}
	ids = append(ids, r.id)
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("CreateOnce with one key gave ids %v; want one", ids)
		}
	}
	if len(g.began) != 0 {
		t.Fatalf("%d more Builds began; want one in all", len(g.began))
	}
	if got := teamIDs(t, ctx, c); len(got) != 1 || got[0] != ids[0] {
		t.Fatalf("teams %v; want one, %s", got, ids[0])
	}
}

// A CreateOnce whose caller gave up while its team was built (a time-out)
// is tried again with the key: the retry returns the team's id, and so does
// one after the team was built; no second team is made. Another key makes
// another team.
func TestCreateOnceRetryGivesTheSameTeam(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	g := newGatedBuild()
	startCreators(t, ctx, e, 2, g)
	c := client(t, ctx, connect(t, e))
	short, giveUp := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() {
		_, err := c.CreateOnce(short, "order-2", "gated", nil)
		first <- err
	}()
	<-g.began
	giveUp() // the caller's time-out, while the worker builds the team
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call given up: %v; want context.Canceled", err)
	}
	id, err := c.CreateOnce(ctx, "order-2", "gated", nil)
	if err != nil {
		t.Fatal(err)
	}
	close(g.release)
	again, err := c.CreateOnce(ctx, "order-2", "gated", nil)
	if err != nil || again != id {
		t.Fatalf("a retry after the team was made: %s, %v; want %s", again, err, id)
	}
	other, err := c.CreateOnce(ctx, "order-3", "gated", nil)
	if err != nil {
		t.Fatal(err)
	}
	if other == id {
		t.Fatalf("two keys gave one team %s", id)
	}
	if got := teamIDs(t, ctx, c); len(got) != 2 {
		t.Fatalf("teams %v; want two (%s and %s)", got, id, other)
	}
	if len(g.began) != 1 { // order-3's; order-2's was taken before
		t.Fatalf("%d more Builds began; want one", len(g.began))
	}
}

// A bad key, a key given with another template than its team's, and a
// worker's create request whose team id does not parse are clear errors,
// and make no team. A worker asked to create a team the bucket holds
// already (two workers at once) answers its id.
func TestCreateOnceRefusals(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	ws := startCreators(t, ctx, e, 1, newGatedBuild())
	nc := connect(t, e)
	c := client(t, ctx, nc)
	for _, key := range []string{"", " \t\n"} {
		if _, err := c.CreateOnce(ctx, key, "counters", nil); err == nil || !strings.Contains(err.Error(), "key is empty or blank") {
			t.Errorf("CreateOnce with key %q: %v; want an error naming the key", key, err)
		}
	}
	id, err := c.CreateOnce(ctx, "order-4", "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	reused := `the key names team ` + id.String() + `, made from template "counters", not "gated" (a key names one team)`
	if _, err := c.CreateOnce(ctx, "order-4", "gated", nil); err == nil || err.Error() != "cluster: CreateOnce: "+reused {
		t.Errorf("CreateOnce of another template with the key: %v; want %q", err, "cluster: CreateOnce: "+reused)
	}

	ask := func(template, team string) []byte {
		t.Helper()
		m := &nats.Msg{Subject: ws[0].cfg.createSubject(template), Data: []byte("null"), Header: nats.Header{teamHeader: {team}}}
		rep, err := nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Data
	}
	request := func(team string) createReply {
		t.Helper()
		var r createReply
		if err := json.Unmarshal(ask("counters", team), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := request(id.String()); r.Team != id.String() || r.Error != "" {
		t.Errorf("a create of a team the bucket holds: %+v; want its id, no error", r)
	}
	if r := request("not-a-team"); r.Team != "" || !strings.Contains(r.Error, `header "not-a-team" is not a team id`) {
		t.Errorf("a create naming a bad team id: %+v; want an error naming it", r)
	}
	// The key reused with another template, found by the worker (a
	// CreateOnce that read the bucket before the team's lease was
	// stored): the client's error reads once, with no prefix repeated.
	want := `cluster: create a team from "gated": ` + reused
	if _, err := createAnswer("gated", &id, ask("gated", id.String())); err == nil || err.Error() != want {
		t.Errorf("the key reused with another template, found by the worker: %v; want %q", err, want)
	}
	if got := teamIDs(t, ctx, c); len(got) != 1 || got[0] != id {
		t.Fatalf("teams %v; want one, %s", got, id)
	}
}
