package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/message"
)

// A watch whose consumer is lost and cannot be made again under its next
// name (as when a server gone holds that name's assignment) reads on with
// a consumer of its own making, after the last record it read: the
// records after the loss all come, each once, in order, with no error.
func TestWatchGoesOnWhenItsConsumerCannotBeMadeAgain(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	sys := system(t)
	w := startNamed(t, ctx, nc, sys, "w1")
	c := client(t, ctx, nc)
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	first := send(t, ctx, c, id, "a", "one")
	waitInputs(t, ctx, w.inputs, first...)

	type seen struct {
		m   message.Message
		err error
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan seen, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range c.Watch(wctx, id, 0) {
			got <- seen{m, err}
		}
	}()
	defer func() { stop(); <-done }()
	n := 0 // the records yielded before the loss
	next := func() message.Message {
		t.Helper()
		select {
		case s := <-got:
			if s.err != nil {
				t.Fatalf("the watch yielded an error: %v", s.err)
			}
			return s.m
		case <-ctx.Done():
			t.Fatalf("the watch yielded nothing more after %d records", n)
			return nil
		}
	}
	closes := func(m message.Message, input uuid.UUID) bool {
		p, ok := m.(*message.ProcessedMessage)
		return ok && p.MessageID == input
	}
	for m := next(); !closes(m, first[0]); m = next() {
		n++
	}

	// The watch's consumer, named PREFIX_N by the ordered consumer (N is
	// 1 unless it was made again already): a durable consumer of another
	// kind takes the name it would be made again under (PREFIX_N+1), then
	// the watch's is deleted.
	st, err := c.js.Stream(ctx, c.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for ci := range st.ListConsumers(ctx).Info() {
		if ci.Config.FilterSubject == c.cfg.recordsSubject(id) {
			name = ci.Name
		}
	}
	i := strings.LastIndexByte(name, '_')
	serial, err := strconv.Atoi(name[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("the watch's consumer is %q; want a name PREFIX_N", name)
	}
	blocker := fmt.Sprintf("%s_%d", name[:i], serial+1)
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: blocker, AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: c.cfg.recordsSubject(id)}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.DeleteConsumer(context.Background(), blocker) }()
	if err := st.DeleteConsumer(ctx, name); err != nil {
		t.Fatal(err)
	}

	later := send(t, ctx, c, id, "a", "two", "three")
	waitInputs(t, ctx, w.inputs, later...)
	log, err := ReadTeam(ctx, nc.Conn, id, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uuid.UUID]bool{}
	for _, m := range log {
		want[m.Envelope().ID] = true
	}
	read := map[uuid.UUID]bool{}
	for _, m := range log[:n+1] { // a watch yields the ledger's order
		read[m.Envelope().ID] = true
	}
	for m := next(); !closes(m, later[1]); m = next() {
		if read[m.Envelope().ID] {
			t.Fatalf("the watch yielded record %s again", m.Envelope().ID)
		}
		read[m.Envelope().ID] = true
		if !want[m.Envelope().ID] {
			t.Fatalf("the watch yielded record %s the ledger does not hold", m.Envelope().ID)
		}
	}
	for i, m := range log {
		if closes(m, later[1]) {
			for _, before := range log[:i] {
				if !read[before.Envelope().ID] {
					t.Errorf("the watch skipped a %s record, %s", message.TypeName(before), before.Envelope().ID)
				}
			}
		}
	}
}

// A watch whose connection is closed ends with an error saying so, not
// as a stopped team's watch ends (with no error).
func TestWatchEndsWithAnErrorWhenItsConnectionCloses(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	sys := system(t)
	w := startNamed(t, ctx, connect(t, e), sys, "w1")
	own := connect(t, e) // the client's own connection, closed below
	c := client(t, ctx, own)
	id, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitInputs(t, ctx, w.inputs, send(t, ctx, c, id, "a", "one")...)
	var last error
	records := 0
	for _, err := range c.Watch(ctx, id, 0) {
		if err != nil {
			last = err
			break
		}
		if records++; records == 1 {
			own.Close()
		}
	}
	if !errors.Is(last, ErrUnreachable) {
		t.Fatalf("the watch ended with %v after %d records; want an error wrapping ErrUnreachable", last, records)
	}
}
