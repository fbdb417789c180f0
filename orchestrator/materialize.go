package orchestrator

import (
	"github.com/akgentic/akgentic-go/internal/ids"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/message"
)

// maxSnaps bounds a materializer's cache of snapshot addresses: past it
// the cache starts afresh.
const maxSnaps = 1024

// materializer makes a subscriber's messages from ledger entries: each
// subscriber's goroutine has its own, so no two goroutines share its
// slabs or its cache.
type materializer struct {
	snaps map[*message.Address]*message.Address // snapshot per live address
	slabs slabs                                 // the messages of the hot kinds
}

// forSubscribers returns the subscriber's copy of an entry: every address
// in it as a snapshot.
func (z *materializer) forSubscribers(e *entry, id uint64) message.Message {
	var m message.Message
	if lm := e.logged(); lm != nil {
		if !hasLive(lm) {
			return lm
		}
		m = addrs.Clone(lm)
	} else {
		m = toMessage(&e.rec, ids.At(id), &z.slabs)
	}
	b := m.Envelope()
	b.Sender = z.snap(b.Sender)
	b.Recipient = z.snap(b.Recipient)
	switch t := m.(type) {
	case *message.SentMessage:
		t.Recipient = z.snap(t.Recipient)
		t.Message = z.snapMessage(t.Message)
	case *message.StartMessage:
		t.Parent = z.snap(t.Parent)
	case *message.ErrorMessage:
		t.CurrentMessage = z.snapMessage(t.CurrentMessage)
	case *message.WarningMessage:
		t.CurrentMessage = z.snapMessage(t.CurrentMessage)
	case *message.NotificationMessage:
		t.CurrentMessage = z.snapMessage(t.CurrentMessage)
	}
	return m
}

// snapMessage returns m, or a copy of it with snapshot sender and recipient
// when either is live.
func (z *materializer) snapMessage(m message.Message) message.Message {
	if m == nil {
		return nil
	}
	b := m.Envelope()
	if !isLive(b.Sender) && !isLive(b.Recipient) {
		return m
	}
	c := addrs.Clone(m)
	cb := c.Envelope()
	cb.Sender, cb.Recipient = z.snap(b.Sender), z.snap(b.Recipient)
	return c
}

// snap returns the snapshot form of a, cached per live address so that a
// member's records share one snapshot.
func (z *materializer) snap(a *message.Address) *message.Address {
	if !isLive(a) {
		return a
	}
	if s, ok := z.snaps[a]; ok {
		return s
	}
	s := a.Snapshot()
	if len(z.snaps) >= maxSnaps {
		clear(z.snaps)
	}
	z.snaps[a] = s
	return s
}

// forget drops a stopped member's cached snapshot address.
func (z *materializer) forget(a *message.Address) {
	if a != nil {
		delete(z.snaps, a)
	}
}

var addrs = link.Address[message.Identity, message.Address, message.Message]()

// isLive reports whether a is a live address (not a snapshot or a record).
func isLive(a *message.Address) bool { return addrs.HandleOf(a) != nil }

func hasLive(m message.Message) bool {
	b := m.Envelope()
	if isLive(b.Sender) || isLive(b.Recipient) {
		return true
	}
	switch t := m.(type) {
	case *message.SentMessage:
		return isLive(t.Recipient) || (t.Message != nil && hasLive(t.Message))
	case *message.StartMessage:
		return isLive(t.Parent)
	}
	return false
}
