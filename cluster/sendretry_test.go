package cluster

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// signalHandler is a slog handler that signals each record whose message
// contains substr (when there is room) and drops every record.
type signalHandler struct {
	substr string
	seen   chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signalHandler) WithGroup(string) slog.Handler            { return h }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}

// A Send that JetStream does not answer (here the inbox stream is gone
// for a while, as during a leader election no server takes the publish)
// is tried again with the same input id until it is stored, once.
func TestSendIsTriedAgainWhileJetStreamDoesNotAnswer(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	retried := signalHandler{substr: "trying again with the same id", seen: make(chan struct{}, 1)}
	c, err := NewClient(ctx, nc.Conn, Config{Logger: slog.New(retried)})
	if err != nil {
		t.Fatal(err)
	}
	team := uuid.New()
	l := lease{Owner: "elsewhere", Template: "elsewhere", Until: time.Now().Add(time.Hour).UTC()} // no worker serves it
	if _, err := c.kv.Create(ctx, team.String(), mustJSON(t, l)); err != nil {
		t.Fatal(err)
	}
	if err := c.js.DeleteStream(ctx, c.cfg.inboxStream()); err != nil {
		t.Fatal(err)
	}
	type sent struct {
		id  uuid.UUID
		err error
	}
	done := make(chan sent, 1)
	go func() {
		id, err := c.Send(ctx, team, "a", "hello")
		done <- sent{id, err}
	}()
	select {
	case <-retried.seen:
	case s := <-done:
		t.Fatalf("Send returned before JetStream could store the input: %v, %v", s.id, s.err)
	case <-ctx.Done():
		t.Fatal("Send was not tried again")
	}
	if _, err := ensureInbox(ctx, c.js, c.cfg); err != nil {
		t.Fatal(err)
	}
	var s sent
	select {
	case s = <-done:
	case <-ctx.Done():
		t.Fatal("Send did not return once the inbox was back")
	}
	if s.err != nil {
		t.Fatalf("Send: %v", s.err)
	}
	st, err := c.js.Stream(ctx, c.cfg.inboxStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("the inbox holds %d inputs; want the one sent", info.State.Msgs)
	}
	_, subj, err := teamShard(ctx, c.js, c.cfg, team)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get(jetstream.MsgIDHeader); got != s.id.String() {
		t.Fatalf("the stored input's id is %q; Send returned %s", got, s.id)
	}
}
