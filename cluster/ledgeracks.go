package cluster

import (
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/message"
)

// acked is JetStream's acknowledgement of a record, or of an atomic
// batch's commit (on the client's goroutine): stored, or a duplicate of
// one stored.
func (l *Ledger) acked(_ jetstream.JetStream, m *nats.Msg, pa *jetstream.PubAck) {
	l.mu.Lock()
	recs := l.answeredLocked(m)
	if recs == nil {
		l.mu.Unlock()
		return
	}
	if pa != nil && pa.Sequence > l.ackSeq {
		l.ackSeq = pa.Sequence
	}
	for _, r := range recs {
		delete(l.unacked, indexOf(r))
	}
	l.inflight--
	if l.failing && len(l.unacked) == 0 && len(l.retry) == 0 {
		l.failing = false
		l.logger.Info("cluster: JetStream acknowledges the team's records again")
	}
	l.sendLocked()
	l.signalLocked()
	if l.snapDueLocked() {
		l.wakeLocked() // the pump writes it
	}
	ready := l.readyLocked()
	l.mu.Unlock()
	for _, f := range ready {
		f()
	}
}

// durableCall is a function to call once every record up to index is
// acknowledged.
type durableCall struct {
	index uint64
	f     func()
}

// closes returns the id of the message whose ledger record msg closes: a
// ProcessedMessage (its own turn ended) or a HandledMessage (a running
// turn consumed it).
func closes(msg message.Message) (uuid.UUID, bool) {
	switch m := msg.(type) {
	case *message.ProcessedMessage:
		return m.MessageID, true
	case *message.HandledMessage:
		return m.MessageID, true
	}
	return uuid.Nil, false
}

// readyLocked removes and returns the calls whose records, and every
// record before them, are acknowledged.
func (l *Ledger) readyLocked() []func() {
	var ready []func()
	for len(l.calls) > 0 && !l.pendingLocked(l.calls[0].index) {
		ready = append(ready, l.calls[0].f)
		l.calls = l.calls[1:]
	}
	return ready
}

// onClosed calls f (on a goroutine of the NATS client; f must not block)
// once the record closing message id (its ProcessedMessage or
// HandledMessage) is acknowledged by JetStream with every record before
// it: the durable inbox's hook. f is never called when that record is not
// stored (the team taken over, stopped, the window full); drop forgets it.
func (l *Ledger) onClosed(id uuid.UUID, f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waits == nil {
		l.waits = map[uuid.UUID]func(){}
	}
	l.waits[id] = f
}

// drop forgets a wait of onClosed not yet met.
func (l *Ledger) drop(id uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waits, id)
}

// onFlushed calls f once every record published so far is acknowledged:
// at once when none is waiting.
func (l *Ledger) onFlushed(f func()) {
	l.mu.Lock()
	if l.next > 1 && l.pendingLocked(l.next-1) {
		l.calls = append(l.calls, durableCall{index: l.next - 1, f: f})
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	f()
}
