package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Bad input gets an error naming what is wrong.
func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Stream: "a.b"}, "Config.Stream"},
		{Config{Prefix: "a..b"}, "Config.Prefix"},
		{Config{Prefix: "a.*"}, "Config.Prefix"},
		{Config{Replicas: 7}, "Config.Replicas"},
		{Config{Window: -1}, "Config.Window"},
		{Config{AckTimeout: -time.Second}, "Config.AckTimeout"},
		{Config{FlushTimeout: -time.Second}, "Config.FlushTimeout"},
		{Config{Lease: -time.Second}, "Config.Lease"},
		{Config{Lease: 2}, "Config.Lease"},
		{Config{Lease: 3 * time.Second, Replicas: 3}, "at least 10s on a replicated cluster"},
	} {
		_, err := tc.cfg.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.cfg, err, tc.want)
		}
	}
	for _, ok := range []Config{{}, {Replicas: 3}, {Replicas: 3, Lease: minReplicatedLease}, {Lease: minLease}} {
		if _, err := ok.withDefaults(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestBadArguments(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	if _, _, err := OpenLedger(ctx, nil, uuid.New(), Config{}); err == nil || !strings.Contains(err.Error(), "nil connection") {
		t.Errorf("OpenLedger(nil conn): %v", err)
	}
	if _, _, err := OpenLedger(ctx, nc.Conn, uuid.Nil, Config{}); err == nil || !strings.Contains(err.Error(), "nil team id") {
		t.Errorf("OpenLedger(nil team): %v", err)
	}
	if _, _, err := OpenLedger(ctx, nc.Conn, uuid.New(), Config{Window: -1}); err == nil {
		t.Error("OpenLedger with a bad Config: no error")
	}
	if _, err := ReadTeam(ctx, nil, uuid.New(), Config{}); err == nil || !strings.Contains(err.Error(), "nil connection") {
		t.Errorf("ReadTeam(nil conn): %v", err)
	}
	if _, err := ReadTeam(ctx, nc.Conn, uuid.New(), Config{Stream: "MISSING"}); err == nil || !strings.Contains(err.Error(), "MISSING") {
		t.Errorf("ReadTeam of a missing stream: %v", err)
	}
	sys := system(t)
	if _, err := StartWorker(ctx, nil, sys, Config{}, nil); err == nil || !strings.Contains(err.Error(), "nil connection") {
		t.Errorf("StartWorker(nil conn): %v", err)
	}
	if _, err := StartWorker(ctx, nc.Conn, nil, Config{}, nil); err == nil || !strings.Contains(err.Error(), "nil actor system") {
		t.Errorf("StartWorker(nil system): %v", err)
	}
	if _, err := StartWorker(ctx, nc.Conn, sys, Config{Stream: "A:B"}, nil); err == nil || !strings.Contains(err.Error(), "bucket") {
		t.Errorf("StartWorker with a stream name that makes no bucket name: %v", err)
	}
	// A stream of that name that does not take the teams' subjects.
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenLedger(ctx, nc.Conn, uuid.New(), Config{Stream: "OTHER"}); err == nil || !strings.Contains(err.Error(), "OTHER") {
		t.Errorf("OpenLedger on a stream without the teams' subjects: %v", err)
	}
}

// A record that does not encode is lost alone, reported by Err; the next
// ones are stored. A hook for another team is ignored.
func TestLedgerEncodeFailureAndOtherTeam(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	var logs logCapture
	team := uuid.New()
	l, _, err := OpenLedger(ctx, nc.Conn, team, Config{Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	ok1 := message.NewUserMessage("first")
	ok1.ID = uuid.New()
	l.OnMessage(ok1)
	bad := &message.EventMessage{Event: func() {}} // a func does not encode
	bad.ID = uuid.New()
	l.OnMessage(bad)
	ok2 := message.NewUserMessage("second")
	ok2.ID = uuid.New()
	l.OnMessage(ok2)
	l.SetRestoring(uuid.New(), true) // another team: ignored
	l.OnStop(uuid.New())
	l.OnMessage(&message.EventMessage{Event: message.TeamStoppingEvent{}, Base: message.Base{ID: uuid.New()}})
	l.OnStop(team)
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), "encode") {
		t.Fatalf("Err = %v, want the encode failure", err)
	}
	if !strings.Contains(logs.String(), "another team") {
		t.Errorf("the hooks for another team were not logged:\n%s", logs.String())
	}
	got, err := ReadTeam(ctx, nc.Conn, team, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Envelope().ID != ok1.ID || got[1].Envelope().ID != ok2.ID {
		t.Fatalf("stored %d records, want first, second and the stop event", len(got))
	}
	l.OnMessage(ok1) // after the stop: lost, and Err already says why
}

// ReadTeam puts records in ledger order, keeps one of each index, and
// reports a hole or a record that does not decode, with what precedes it.
func TestReadTeamOrderDuplicatesHoles(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	team, _, js, subj := rawTeam(t, ctx, nc)
	put := func(index string, data []byte) {
		t.Helper()
		m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
		if index != "" {
			m.Header.Set(indexHeader, index)
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(text string) []byte {
		m := message.NewUserMessage(text)
		m.ID = uuid.New()
		b, err := message.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	put("2", rec("two"))
	put("1", rec("one"))
	put("2", rec("two again")) // a retry stored twice
	got, err := ReadTeam(ctx, nc.Conn, team, Config{})
	if err != nil || len(got) != 2 {
		t.Fatalf("ReadTeam: %d records, %v; want 2 in order", len(got), err)
	}
	if got[0].(*message.UserMessage).Content != "one" || got[1].(*message.UserMessage).Content != "two" {
		t.Fatalf("order: %v, %v", got[0], got[1])
	}
	put("4", rec("four"))
	got, err = ReadTeam(ctx, nc.Conn, team, Config{})
	if err == nil || !strings.Contains(err.Error(), "record 3 is missing") || len(got) != 2 {
		t.Fatalf("with a hole: %d records, %v", len(got), err)
	}
	put("3", []byte(`{"__model__":"NoSuchType"}`))
	if _, err = ReadTeam(ctx, nc.Conn, team, Config{}); err == nil || !strings.Contains(err.Error(), "ledger index 3") {
		t.Fatalf("a record that does not decode: %v", err)
	}
	other := uuid.New() // a team whose one record has no index
	subj = (Config{Prefix: defaultPrefix}).recordsSubject(other)
	put("", rec("no index"))
	if _, err = ReadTeam(ctx, nc.Conn, other, Config{}); err == nil || !strings.Contains(err.Error(), indexHeader) {
		t.Fatalf("a record with no index: %v", err)
	}
	if err := context.Cause(ctx); err != nil {
		t.Fatal(err)
	}
}

// An owner that stopped with a record unacknowledged and later ones
// acknowledged leaves a hole; the next owner resumes from the record before
// it and writes over the rest, so a read takes each owner's part (its claim,
// the epoch) in turn and the ledger has no hole again.
func TestHoleOfAnOldOwnerIsWrittenOver(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	team, l, js, subj := rawTeam(t, ctx, nc)
	// The first owner's records 1, 2 and 4 (3 never acknowledged).
	var contents []string
	for _, i := range []string{"1", "2", "4"} {
		m := message.NewUserMessage("old " + i)
		m.ID = uuid.New()
		b, err := message.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		msg := &nats.Msg{Subject: subj, Data: b, Header: nats.Header{indexHeader: {i}}}
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(l.claimSeq))
		msg.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, l.ownSubj)
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadTeam(ctx, nc.Conn, team, Config{}); !errors.Is(err, errHole) {
		t.Fatalf("the old owner's hole: %v", err)
	}
	// The next owner resumes from record 2 and writes 3 and 4.
	l2, log, err := OpenLedger(ctx, nc.Conn, team, Config{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 {
		t.Fatalf("resumed with %d records, want the 2 before the hole", len(log))
	}
	for _, text := range []string{"new 3", "new 4"} {
		m := message.NewUserMessage(text)
		m.ID = uuid.New()
		l2.OnMessage(m)
	}
	l2.OnStop(team)
	got, err := ReadTeam(ctx, nc.Conn, team, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		contents = append(contents, m.(*message.UserMessage).Content)
	}
	if strings.Join(contents, ",") != "old 1,old 2,new 3,new 4" {
		t.Fatalf("the ledger after the new owner: %v", contents)
	}
}

// rawTeam claims a new team (its ledger closed at once) and returns what a
// test needs to write its records subject by hand.
func rawTeam(t *testing.T, ctx context.Context, nc *conn) (uuid.UUID, *Ledger, jetstream.JetStream, string) {
	t.Helper()
	team := uuid.New()
	l, _, err := OpenLedger(ctx, nc.Conn, team, Config{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	l.OnStop(team)
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	return team, l, js, l.recSubj
}

// NATS unreachable is an error of its own (ErrUnreachable) naming the
// connection's state: a closed connection, and a server gone while the client
// reconnects.
func TestClientUnreachable(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	c := client(t, ctx, nc)
	team := uuid.New()

	e.Close() // the client reconnects, forever
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := c.Send(short, team, "a", "hi"); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "RECONNECTING") {
		t.Errorf("Send while the server is gone: %v; want ErrUnreachable, reconnecting", err)
	}

	nc.Close()
	if _, err := c.Send(ctx, team, "a", "hi"); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "CLOSED") {
		t.Errorf("Send on a closed connection: %v; want ErrUnreachable, closed", err)
	}
	if _, err := c.Answer(ctx, team, uuid.New(), "yes"); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Answer on a closed connection: %v; want ErrUnreachable", err)
	}
	if _, err := c.Teams(ctx); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Teams on a closed connection: %v; want ErrUnreachable", err)
	}
	if err := c.Stop(ctx, team); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Stop on a closed connection: %v; want ErrUnreachable", err)
	}
	var watched error
	for _, err := range c.Watch(ctx, team, 0) {
		watched = err
		break
	}
	if !errors.Is(watched, ErrUnreachable) {
		t.Errorf("Watch on a closed connection: %v; want ErrUnreachable", watched)
	}
	if _, err := NewClient(ctx, nc.Conn, Config{}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("NewClient on a closed connection: %v; want ErrUnreachable", err)
	}
}

// A record larger than the server's max_payload is refused alone before
// it is published (the NATS client would refuse it on every try): the
// team is told, Err says why, the next records are stored, and the ledger
// has no hole (review finding: it stalled and left one).
func TestLedgerRecordTooLarge(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	id := uuid.New()
	l, _, err := OpenLedger(ctx, nc.Conn, id, Config{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	team, err := orchestrator.New(system(t), orchestrator.WithTeamID(id), orchestrator.WithSubscribers(l))
	if err != nil {
		t.Fatal(err)
	}
	l.Attach(team)
	big := &message.WarningMessage{}
	big.ContentType, big.Content = "text/plain", strings.Repeat("x", int(nc.MaxPayload())+1)
	if err := team.Emit(ctx, big); err != nil {
		t.Fatal(err)
	}
	small := &message.WarningMessage{}
	small.ContentType, small.Content = "text/plain", "after the big one"
	if err := team.Emit(ctx, small); err != nil {
		t.Fatal(err)
	}
	var told bool
	for !told { // the warning comes from the Ledger's pump
		changed := l.changedCh()
		if err := team.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		upTo := l.next - 1
		l.mu.Unlock()
		if err := l.flush(ctx, upTo); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTeam(ctx, nc.Conn, id, Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got {
			if w, ok := m.(*message.WarningMessage); ok && strings.Contains(w.Content, "is not stored in the team's ledger") && strings.Contains(w.Content, "max_payload") {
				told = true
			}
			if m.Envelope().ID == big.ID {
				t.Fatal("the record larger than max_payload was stored")
			}
		}
		if !told {
			select {
			case <-ctx.Done():
				t.Fatal("the team was not told of the refused record")
			case <-changed:
			}
		}
	}
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), "max_payload") {
		t.Fatalf("Err = %v; want the size refusal", err)
	}
	if err := team.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil { // no hole
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got, func(m message.Message) bool { return m.Envelope().ID == small.ID }) {
		t.Fatal("the record after the refused one is not stored")
	}
}

// changedCh is the channel closed at the Ledger's next acknowledgement.
func (l *Ledger) changedCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}
