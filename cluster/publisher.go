package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publisher is the JetStream context the Ledgers of one connection share
// for their asynchronous publishes (one per connection and ack time-out):
// one reply subscription and one goroutine of the client per connection,
// not per team, ended when the connection closes. It hands each
// acknowledgement or failure to the Ledger of the record's subject.
//
// Sharing also avoids a race of the client: CleanupPublisher right after
// the first asynchronous publish can leave the client's reconnect watcher
// blocked forever on a nil channel.
type publisher struct {
	js      jetstream.JetStream
	ledgers sync.Map // ledgerKey → *Ledger
}

type publisherKey struct {
	nc      *nats.Conn
	timeout time.Duration
}

// publishers holds the publisher of each open connection; a closed
// connection's is dropped by the next publisherFor.
var publishers sync.Map // publisherKey → *publisher

// unlimited is the client's bound on pending asynchronous publishes: each
// Ledger keeps its own window, so the shared context never stalls one
// team's hook for another's.
const unlimited = 1 << 30

// publisherFor returns the shared publisher of nc for ack time-out d.
func publisherFor(nc *nats.Conn, d time.Duration) (*publisher, error) {
	publishers.Range(func(k, _ any) bool {
		if k.(publisherKey).nc.IsClosed() {
			publishers.Delete(k)
		}
		return true
	})
	key := publisherKey{nc, d}
	if p, ok := publishers.Load(key); ok {
		return p.(*publisher), nil
	}
	p := &publisher{}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(unlimited),
		jetstream.WithPublishAsyncTimeout(d),
		jetstream.WithPublishAsyncAckHandler(p.acked),
		jetstream.WithPublishAsyncErrHandler(p.failed))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	p.js = js
	actual, _ := publishers.LoadOrStore(key, p)
	return actual.(*publisher), nil
}

// A Ledger is known by its records subject and its claim: two Ledgers of
// one team in a process (an old owner still stopping, a new one resumed)
// never get each other's answers.
func ledgerKey(subject, claim string) string { return subject + " " + claim }

func (l *Ledger) key() string { return ledgerKey(l.recSubj, strconv.FormatUint(l.claimSeq, 10)) }

func (p *publisher) add(l *Ledger)    { p.ledgers.Store(l.key(), l) }
func (p *publisher) remove(l *Ledger) { p.ledgers.CompareAndDelete(l.key(), l) }

func (p *publisher) ledger(m *nats.Msg) *Ledger {
	if l, ok := p.ledgers.Load(ledgerKey(m.Subject, m.Header.Get(jetstream.ExpectedLastSubjSeqHeader))); ok {
		return l.(*Ledger)
	}
	return nil // a late answer for a Ledger that was closed
}

func (p *publisher) acked(js jetstream.JetStream, m *nats.Msg, a *jetstream.PubAck) {
	if l := p.ledger(m); l != nil {
		l.acked(js, m, a)
	}
}

func (p *publisher) failed(js jetstream.JetStream, m *nats.Msg, err error) {
	l := p.ledger(m)
	switch {
	case l == nil:
	case errors.Is(err, jetstream.ErrAsyncPublishTimeout):
		// The client reports a time-out with its publisher's lock held,
		// and the Ledger publishes again at once, which takes that lock:
		// on this goroutine it would wait for itself forever.
		go l.failed(js, m, err)
	default:
		l.failed(js, m, err)
	}
}
