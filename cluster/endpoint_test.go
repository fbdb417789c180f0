package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// modelWorker is a worker of the assistant template whose agents call its
// own model server, new ones (Build) and restored ones (Template.Endpoint)
// alike.
type modelWorker struct {
	*Worker
	resumed    chan uuid.UUID // the teams it took over or activated
	passivated chan uuid.UUID // the teams it passivated
}

// startModelWorker starts a worker named owner whose assistants call srv
// with key, passivating teams idle for idle (0: never); it is closed when
// the test ends.
func startModelWorker(t *testing.T, ctx context.Context, nc *conn, owner string, srv *llmtest.Server, key string, idle time.Duration) *modelWorker {
	t.Helper()
	env := &agent.Env{HTTPClient: srv.HTTPClient()}
	tmpls := assistantTeam(srv, env)
	tmpl := tmpls["assistant"]
	build := tmpl.Build
	tmpl.Build = func(ctx context.Context, team *orchestrator.Team, params json.RawMessage) error {
		card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: "answers", Config: agent.NewConfig("@Helper", "Helper")})
		if err != nil {
			return err
		}
		if err := team.Register(ctx, card); err != nil { // in the ledger: no Resume registers it again
			return err
		}
		return build(ctx, team, params)
	}
	tmpl.Endpoint = func(recorded llm.ModelConfig) llm.ModelConfig {
		recorded.BaseURL, recorded.APIKey = srv.URL(), key
		return recorded
	}
	tmpls["assistant"] = tmpl
	mw := &modelWorker{resumed: make(chan uuid.UUID, 4), passivated: make(chan uuid.UUID, 4)}
	cfg := Config{Logger: discard, Lease: testLease, Owner: owner, IdleAfter: idle,
		resumed:    func(id uuid.UUID) { mw.resumed <- id },
		passivated: func(id uuid.UUID) { mw.passivated <- id },
	}
	w, err := StartWorker(ctx, nc.Conn, system(t), cfg, tmpls, agent.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) }) // a crashed one's connection is closed
	mw.Worker = w
	return mw
}

// assistantSays watches the team until @Assistant sends the person text.
func assistantSays(t *testing.T, ctx context.Context, c *Client, team uuid.UUID, text string) {
	t.Helper()
	said := watchUntil(t, ctx, c, team, 0, func(m message.Message) bool {
		s, ok := m.(*message.SentMessage)
		if !ok || s.Sender.Name() != "@Assistant" || s.Recipient.Name() != "@Human" {
			return false
		}
		am, ok := s.Message.(*agent.AgentMessage)
		return ok && am.Content == text
	})
	if !said {
		t.Fatalf("@Assistant did not answer %q", text)
	}
}

// A team made on worker A, whose assistant calls A's model server, is
// restored on worker B, A and its model server gone: crashed with the team
// running (a takeover), or closed with the team passive (an activation).
// The restored assistant's next model call reaches B's server, with the
// key B's template gives (Template.Endpoint), not the base URL its log
// recorded, and its answer arrives; no record of the stream holds either
// key. The catalog of cards its Build registered is back too, from the
// ledger.
func TestRestoredTeamCallsItsNewWorkersModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		passive bool
	}{
		{"takeover after a crash", false},
		{"activation after a close", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := embedded(t)
			ctx := actortest.Context(t)
			srvA := llmtest.NewServer(llmtest.WithReporter(t))
			t.Cleanup(srvA.Close)
			srvB := llmtest.NewServer(llmtest.WithReporter(t))
			t.Cleanup(srvB.Close)
			const keyA, keyB = "sk-worker-a-key", "sk-worker-b-key"
			var idle time.Duration
			if tc.passive {
				idle = 10 * time.Millisecond
			}
			ncA := connect(t, e)
			wA := startModelWorker(t, ctx, ncA, "A", srvA, keyA, idle)
			c := client(t, ctx, connect(t, e))
			id, err := c.Create(ctx, "assistant", nil)
			if err != nil {
				t.Fatal(err)
			}
			srvA.Model("@Assistant").Enqueue(llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"from A"}]}`))
			send(t, ctx, c, id, "@Assistant", "first")
			assistantSays(t, ctx, c, id, "from A")
			if tc.passive {
				waitFor(t, ctx, wA.passivated, id, "passivated")
				if err := wA.Close(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := acked(ctx, wA.team(id), wA.ledgerOf(id)); err != nil { // the answer is stored
					t.Fatal(err)
				}
				ncA.Close() // the crash
			}
			srvA.Close()

			srvB.Model("@Assistant").Enqueue(llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"from B"}]}`))
			wB := startModelWorker(t, ctx, connect(t, e), "B", srvB, keyB, 0)
			if !tc.passive {
				takenOver(t, ctx, wB.Worker, wB.resumed, id)
			}
			send(t, ctx, c, id, "@Assistant", "second")
			assistantSays(t, ctx, c, id, "from B")
			if tc.passive {
				waitFor(t, ctx, wB.resumed, id, "activated on B")
			}

			if reqs := srvB.RequestsFor("@Assistant"); len(reqs) != 1 || reqs[0].Authorization != "Bearer "+keyB {
				t.Fatalf("B's model server got %d requests (the first with %q); want 1 with B's key", len(reqs), firstAuthorization(reqs))
			}
			if n := len(srvA.RequestsFor("@Assistant")); n != 1 {
				t.Fatalf("A's model server got %d requests; want 1 (before A went)", n)
			}
			noKeyStored(t, ctx, c, keyA, keyB)
			// The catalog came back from the ledger, with no Resume.
			if cards, err := wB.team(id).Cards(ctx); err != nil || len(cards) != 1 || cards[0].Role() != "Helper" {
				t.Fatalf("the restored team's catalog: %v, %v; want the Helper card its Build registered", cards, err)
			}
		})
	}
}

// firstAuthorization is the Authorization header of the first request, ""
// when none came.
func firstAuthorization(reqs []*llmtest.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Authorization
}

// noKeyStored checks that no message of the records stream (every team's
// records and claims, headers included) holds any of keys.
func noKeyStored(t *testing.T, ctx context.Context, c *Client, keys ...string) {
	t.Helper()
	info, err := c.ledger.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := c.ledger.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		raw := string(m.Data)
		for k, vs := range m.Header {
			raw += k + strings.Join(vs, ",")
		}
		for _, key := range keys {
			if strings.Contains(raw, key) {
				t.Fatalf("record %d of the stream holds a model key: %s", seq, m.Data)
			}
		}
	}
}
