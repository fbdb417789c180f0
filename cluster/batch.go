package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Atomic batches (ADR-50, nats-server 2.12 and later), on a replicated
// stream: a replicated stream refuses a publish whose claims-subject check
// overlaps one still being applied (10164), so a Ledger keeps one send in
// flight there; that send is an atomic batch of every record queued
// meanwhile (up to maxBatch), each record of it carrying the claims check,
// which the server runs once for the whole batch when the commit comes.
// The commit's acknowledgement acknowledges the batch; a refused batch
// stores nothing.
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
	// maxBatch is the server's default bound on a batch's records
	// (JetStream's max_batch_size limit); a server configured lower
	// refuses the batch (errBatchTooLarge) and the Ledger halves it.
	maxBatch = 1000
)

// JetStream's refusals of an atomic batch (nats-server's errors.json).
const (
	errDupInProcess   jetstream.ErrorCode = 10158 // a record's id is in a batch still being applied
	errBatchDisabled  jetstream.ErrorCode = 10174 // the stream does not take atomic batches
	errBatchIncomplt  jetstream.ErrorCode = 10176 // a record of the batch did not reach the server, or it timed out
	errBatchTooLarge  jetstream.ErrorCode = 10199 // more records than the server's max_batch_size
	errBatchDuplicate jetstream.ErrorCode = 10201 // a record of the batch is already stored
	errBatchInflight  jetstream.ErrorCode = 10210 // too many batches in flight on the stream or server
)

// sendBatchLocked is sendLocked on a stream taking atomic batches: when no
// send is in flight, the queued records (up to batchMax) go out as one
// batch, or as a plain publish when there is one (or while solo records
// are to be sent one by one).
func (l *Ledger) sendBatchLocked() {
	if l.inflight > 0 || l.fenced {
		return
	}
	n := l.batchMax
	if l.solo > 0 {
		n = 1
	}
	recs := make([]*nats.Msg, 0, min(n, len(l.queued)))
	for len(l.queued) > 0 && len(recs) < n {
		m := l.queued[0]
		l.queued[0] = nil
		l.queued = l.queued[1:]
		if _, ok := l.unacked[indexOf(m)]; ok { // else acknowledged meanwhile, or given up
			recs = append(recs, m)
		}
	}
	switch len(recs) {
	case 0:
		return
	case 1:
		if _, err := l.js.PublishMsgAsync(recs[0]); err != nil {
			l.notSentLocked(err, recs[0])
			return
		}
		l.solo = max(0, l.solo-1)
	default:
		id := uuid.NewString()
		if err := l.publishBatch(id, recs); err != nil {
			// Records already sent wait on the server until its batch
			// time-out, then are dropped: nothing of the batch is stored.
			l.notSentLocked(err, recs...)
			return
		}
		l.batch, l.batchID = recs, id
	}
	l.inflight++
}

// publishBatch sends recs as the atomic batch id: every record but the
// last without a reply (the server answers the commit only), the last, the
// commit, asynchronously through the shared publisher, which hands its
// acknowledgement or failure to the Ledger (acked, failed). The records
// themselves are not changed: a batch sent again gets a new id.
func (l *Ledger) publishBatch(id string, recs []*nats.Msg) error {
	nc := l.js.Conn()
	last := len(recs) - 1
	for i, r := range recs {
		h := make(nats.Header, len(r.Header)+3)
		maps.Copy(h, r.Header)
		h.Set(batchIDHeader, id)
		h.Set(batchSeqHeader, strconv.Itoa(i+1))
		m := &nats.Msg{Subject: r.Subject, Data: r.Data, Header: h}
		if i < last {
			if err := nc.PublishMsg(m); err != nil {
				return err
			}
			continue
		}
		h.Set(batchCommitHeader, "1")
		if _, err := l.js.PublishMsgAsync(m); err != nil {
			return err
		}
	}
	return nil
}

// answeredLocked returns the records an answer of JetStream is for (the
// record itself, or every record of the batch it commits) that still wait
// for it; none for a late answer (the record acknowledged meanwhile, the
// batch already answered and sent again).
func (l *Ledger) answeredLocked(m *nats.Msg) []*nats.Msg {
	id := m.Header.Get(batchIDHeader)
	if id == "" {
		if _, ok := l.unacked[indexOf(m)]; !ok {
			return nil
		}
		return []*nats.Msg{m}
	}
	if id != l.batchID {
		return nil
	}
	recs := slices.DeleteFunc(l.batch, func(r *nats.Msg) bool {
		_, ok := l.unacked[indexOf(r)]
		return !ok
	})
	l.batch, l.batchID = nil, ""
	if len(recs) == 0 {
		return nil
	}
	return recs
}

// batchRefusedLocked reports whether err is JetStream refusing an atomic
// batch of n records for a reason that sending it again, perhaps otherwise,
// cures; it adapts the next sends to the reason.
func (l *Ledger) batchRefusedLocked(err error, n int) bool {
	var ae *jetstream.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode {
	case errDupInProcess, errBatchIncomplt, errBatchInflight:
		return true // sent again as it is
	case errBatchDuplicate:
		// A record of it was stored (an acknowledgement lost, a batch sent
		// again): these n records go one by one, each acknowledged even
		// when it is a duplicate, then batches resume.
		l.solo = n
		return true
	case errBatchTooLarge:
		l.batchMax = max(1, min(l.batchMax, n)/2)
		l.logger.Warn("cluster: JetStream refused a batch of records as too large; smaller batches from now on",
			"records", n, "batch_max", l.batchMax, "error", err)
		return true
	case errBatchDisabled:
		l.batchMax = 0
		l.logger.Warn("cluster: the stream no longer takes atomic batches; the ledger keeps one record in flight",
			"error", err)
		return true
	}
	return false
}

// dropLocked forgets records JetStream will not store, counted lost.
func (l *Ledger) dropLocked(recs []*nats.Msg) {
	for _, r := range recs {
		delete(l.unacked, indexOf(r))
	}
	l.lost += uint64(len(recs))
}

// span names records for a message: "record 7", or "records 7 to 12" for
// a batch.
func span(recs []*nats.Msg) string {
	first := recs[0].Header.Get(indexHeader)
	if len(recs) == 1 {
		return "record " + first
	}
	return fmt.Sprintf("records %s to %s", first, recs[len(recs)-1].Header.Get(indexHeader))
}
