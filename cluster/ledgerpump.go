package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/message"
)

// failed is a publish that got no acknowledgement, a record's or an
// atomic batch's commit (on the client's goroutine): refused because
// another owner claimed the team (a batch: none of its records stored), or
// failed (time-out, connection lost), to be sent again.
func (l *Ledger) failed(_ jetstream.JetStream, m *nats.Msg, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.answeredLocked(m)
	if recs == nil {
		return
	}
	l.inflight--
	var ae *jetstream.APIError
	switch {
	case isBusy(err):
		// A replicated stream still applying a record with the same
		// check: not a takeover; sent again.
		l.notSentLocked(err, recs...)
	case len(recs) > 1 && l.batchRefusedLocked(err, len(recs)):
		l.notSentLocked(err, recs...)
	case isFence(err):
		l.dropLocked(recs)
		if !l.fenced {
			l.fenced = true
			l.stopTeam = true
			l.failLocked(fmt.Errorf("%w: JetStream refused %s of team %s (%v); this copy of the team stops",
				ErrFenced, span(recs), l.team, err), "")
			l.logger.Error("cluster: the team was taken over by another owner; stopping this copy of the team",
				"owner", l.cfg.Owner, "claim_seq", l.claimSeq)
			l.wakeLocked()
		}
	case errors.Is(err, jetstream.ErrJetStreamPublisherClosed), l.fenced:
		l.dropLocked(recs)
		l.failLocked(fmt.Errorf("cluster: %s of team %s never acknowledged: %w", span(recs), l.team, err), "")
	case errors.As(err, &ae):
		// Refused for good (too large, no such stream): the ledger would
		// have a hole, so nothing more is published.
		l.dropLocked(recs)
		l.broken = true
		l.failLocked(fmt.Errorf("cluster: JetStream refused %s of team %s: %w; later records are not published", span(recs), l.team, err),
			fmt.Sprintf("the team's ledger stopped at %s: JetStream refused it (%v)", span(recs), err))
	default:
		l.notSentLocked(err, recs...)
	}
	l.sendLocked()
	l.signalLocked()
}

// failingLocked logs the first failed publish of an outage.
func (l *Ledger) failingLocked(err error) {
	if !l.failing {
		l.failing = true
		l.logger.Warn("cluster: JetStream did not acknowledge a record; sending again while the window has room",
			"error", err, "unacknowledged", len(l.unacked), "window", l.cfg.Window)
	}
}

// failLocked keeps the first failure for Err and logs it; a failure with
// a warning for the team (one that stops the ledger: it comes once) is
// logged and told to the team even when it is not the first.
func (l *Ledger) failLocked(err error, warn string) {
	first := l.err == nil
	if first {
		l.err = err
	}
	if first || warn != "" {
		l.logger.Error("cluster: team records are not stored", "error", err, "lost", l.lost)
	}
	if warn != "" {
		l.warn = warn
		l.wakeLocked()
	}
}

// signalLocked wakes whoever waits for acknowledgements.
func (l *Ledger) signalLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Ledger) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakeLocked()
}

// wakeLocked wakes the pump, started the first time it is needed.
func (l *Ledger) wakeLocked() {
	l.pumpOnce.Do(func() { l.wg.Go(l.pump) })
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// pump is the Ledger's goroutine: it sends failed publishes again, emits
// warnings through the team and stops a fenced team. It never runs on the
// orchestrator's goroutine, so Team.Emit cannot deadlock with a hook.
func (l *Ledger) pump() {
	backoff := retryMin
	var timer *time.Timer
	var retryC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-l.quit:
			return
		case <-l.kick:
		case <-retryC:
			retryC = nil
			if l.resend() {
				backoff = retryMin
			} else {
				backoff = min(2*backoff, retryMax)
			}
		}
		l.mu.Lock()
		t, warn, stop := l.handle, l.warn, l.stopTeam
		if t != nil {
			l.warn, l.stopTeam = "", false
		}
		waiting := len(l.retry) > 0
		snap := l.snapDueLocked()
		l.mu.Unlock()
		if stop && t != nil {
			// Ask for the stop without waiting for it: the team's stop
			// ends with OnStop, which waits for this goroutine's peers.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = t.Stop(ctx)
		}
		if warn != "" && t != nil {
			w := &message.WarningMessage{}
			w.ContentType, w.Content = "text/plain", "cluster: "+warn
			if err := t.Emit(l.emitCtx, w); err != nil {
				l.logger.Debug("cluster: the warning could not be told to the team", "error", err)
			}
		}
		if snap {
			ctx, cancel := context.WithTimeout(context.Background(), l.cfg.FlushTimeout)
			if _, err := l.writeSnapshot(ctx, false); err != nil {
				l.logger.Warn("cluster: the team's snapshot was not stored; its next restore reads from the last one", "error", err)
			}
			cancel()
		}
		if waiting && retryC == nil {
			if timer == nil {
				timer = time.NewTimer(backoff)
			} else {
				timer.Reset(backoff)
			}
			retryC = timer.C
		}
	}
}

// resend puts the failed records back at the head of the send queue, in
// ledger order, and sends what the depth allows; it reports whether no
// send failed.
func (l *Ledger) resend() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	todo := l.retry
	l.retry = nil
	slices.SortFunc(todo, func(a, b *nats.Msg) int { return cmp.Compare(indexOf(a), indexOf(b)) })
	l.queued = append(todo, l.queued...)
	l.sendLocked()
	return len(l.retry) == 0
}
