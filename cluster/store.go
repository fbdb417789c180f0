package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/message"
)

// indexHeader carries a record's place in its team's ledger (1, 2, ...).
const indexHeader = "Akgentic-Index"

// readBatch is how many records one pull of a read asks for at most: a
// ledger of fewer records comes in one pull, from one consumer. (The
// read used an ordered consumer before, which made its consumer again for
// every pull of 512: three consumers made and deleted for 1,000 records.
// The one-pull read costs less CPU: 6.2 ms in place of 7.0 at 1,000
// records, 0.54 ms in place of 0.79 at 10, BenchmarkReadTeam, as
// docs/cluster.md's table gives them.)
const readBatch = 4096

// claimAttempts bounds the retries of a claim that lost a race with
// another claim.
const claimAttempts = 5

var (
	// ErrFenced is wrapped by a Ledger's Err once JetStream refused its
	// records because another process claimed the team: this process's
	// copy of the team is stopped, and nothing it writes is stored.
	ErrFenced = errors.New("cluster: the team was taken over by another owner")
	// ErrWindowFull is wrapped by a Ledger's Err when a record came while
	// Config.Window records were still unacknowledged (JetStream
	// unreachable for too long): that record and every later one are not
	// published, so the stream keeps a prefix of the team's ledger with
	// no hole.
	ErrWindowFull = errors.New("cluster: the window of unacknowledged records is full")
)

// ensureStream creates the stream of cfg when it is missing and checks
// that an existing one takes the teams' subjects. The stream takes atomic
// batches (AllowAtomicPublish, nats-server 2.12 and later): a stream made
// without them is updated to take them; when the update fails (a server
// too old, no permission) the stream is used as it is, and a Ledger on it
// keeps one record in flight when it is replicated (logged).
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	return untilReady(ctx, func(ctx context.Context) (jetstream.Stream, error) { return ensureStreamOnce(ctx, js, cfg) })
}

// ensureStreamOnce is one try of ensureStream.
func ensureStreamOnce(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	subjects := []string{cfg.Prefix + ".rec.*", cfg.Prefix + ".own.*", cfg.Prefix + ".snap.*"}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:               cfg.Stream,
		Description:        "akgentic team ledgers (records and claims)",
		Subjects:           subjects,
		Storage:            jetstream.FileStorage,
		Replicas:           cfg.Replicas,
		AllowAtomicPublish: true,
		MaxConsumers:       streamConsumers,
	})
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil, fmt.Errorf("cluster: create stream %s: %w", cfg.Stream, err)
	}
	st, err = js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", cfg.Stream, err)
	}
	have := st.CachedInfo().Config.Subjects
	for _, s := range subjects[:2] {
		if !slices.Contains(have, s) {
			return nil, fmt.Errorf("cluster: stream %s exists with subjects %v, without %s", cfg.Stream, have, s)
		}
	}
	if snaps := subjects[2]; !slices.Contains(have, snaps) {
		// A stream made before snapshots: it takes their subject too.
		sc := st.CachedInfo().Config
		sc.Subjects = append(slices.Clone(sc.Subjects), snaps)
		up, err := js.UpdateStream(ctx, sc)
		if err != nil {
			return nil, fmt.Errorf("cluster: stream %s: add the snapshots' subject %s: %w", cfg.Stream, snaps, err)
		}
		st = up
	}
	if st, err = boundConsumers(ctx, js, st, cfg); err != nil {
		return nil, err
	}
	if sc := st.CachedInfo().Config; !sc.AllowAtomicPublish {
		sc.AllowAtomicPublish = true
		up, err := js.UpdateStream(ctx, sc)
		if err != nil {
			cfg.Logger.Warn("cluster: the stream does not take atomic batches and could not be updated to take them",
				"stream", cfg.Stream, "error", err)
			return st, nil
		}
		cfg.Logger.Info("cluster: the stream now takes atomic batches (updated)", "stream", cfg.Stream,
			"atomic", up.CachedInfo().Config.AllowAtomicPublish)
		return up, nil
	}
	return st, nil
}

// claim is what a claim message holds.
type claim struct {
	Owner string    `json:"owner"`
	At    time.Time `json:"at"`
}

// claimTeam stores a new claim of the team by cfg.Owner, stated to follow
// the last claim stored (so that two claims racing cannot both win), and
// returns its stream sequence: the one every record of the new owner
// expects on the claims subject.
func claimTeam(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, cfg Config, team uuid.UUID) (uint64, error) {
	subj := cfg.claimsSubject(team)
	data, err := json.Marshal(claim{Owner: cfg.Owner, At: time.Now().UTC()})
	if err != nil {
		return 0, err
	}
	wait := retryMin
	for lost := 0; lost < claimAttempts; {
		var last uint64
		m, err := st.GetLastMsgForSubject(ctx, subj)
		switch {
		case err == nil:
			last = m.Sequence
		case errors.Is(err, jetstream.ErrMsgNotFound):
		default:
			return 0, fmt.Errorf("cluster: claim team %s: read its last claim: %w", team, err)
		}
		ack, err := js.Publish(ctx, subj, data, jetstream.WithExpectLastSequencePerSubject(last))
		if err == nil {
			return ack.Sequence, nil
		}
		if isBusy(err) {
			// A replicated stream still applying a publish checked on the
			// claims subject (the current owner's record or batch): no race
			// lost; tried again after a pause.
			if err := clock.Sleep(ctx, wait); err != nil {
				return 0, fmt.Errorf("cluster: claim team %s: the stream stayed busy with its records: %w", team, err)
			}
			wait = min(2*wait, retryMax)
			continue
		}
		if !isFence(err) {
			return 0, fmt.Errorf("cluster: claim team %s: %w", team, err)
		}
		lost++
	}
	return 0, fmt.Errorf("cluster: claim team %s: %d attempts lost to other claims", team, claimAttempts)
}

// isFence reports whether err is JetStream refusing a publish whose
// expected last subject sequence is not the subject's.
func isFence(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// isBusy reports whether err is a replicated stream refusing a publish
// because another one checking the same subject is still being applied
// (JetStream answers 10164 then, 10071 for a real mismatch).
func isBusy(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// indexed is one record read from the stream.
type indexed struct {
	epoch uint64 // the claim its owner wrote under (its stream sequence); 0 when unknown
	index uint64
	seq   uint64
	msg   message.Message
}

// ReadTeam returns the records of a team stored in the stream of cfg, in
// ledger order, for orchestrator.Restore (or to inspect a team). It does
// not claim the team. A team with no record gives an empty log and no
// error. A record that does not decode, or a hole in the ledger (a record
// missing between two stored ones), is an error naming it, returned with
// the records before it.
func ReadTeam(ctx context.Context, nc *nats.Conn, team uuid.UUID, cfg Config) ([]message.Message, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, errors.New("cluster: ReadTeam: nil connection")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("cluster: read team %s: stream %s: %w", team, cfg.Stream, err)
	}
	log, _, err := readRecords(ctx, st, cfg.recordsSubject(team))
	return log, err
}

// after says where a read begins: the records of ledger index above base,
// stored from stream sequence from on (the zero value: every record).
type after struct {
	from, base uint64
}

// read is what readRecords returns besides the records: the last index
// in ledger order, and the stream sequence of the subject's last message
// when the read began (0 when it held none).
type read struct {
	last, lastSeq uint64
}

// readRecords reads every record on subj up to the last one stored when
// it was called, and returns them in ledger order with the last index. A
// read that fails because the stream has no leader for a moment (a
// replicated stream electing one, a server restarting) is tried again,
// until ctx ends.
func readRecords(ctx context.Context, st jetstream.Stream, subj string) ([]message.Message, uint64, error) {
	log, r, err := readRecordsAfter(ctx, st, subj, after{})
	return log, r.last, err
}

// readRecordsAfter is readRecords of the records after a (a snapshot's):
// the records of ledger index above a.base, stored from stream sequence
// a.from on, in ledger order from a.base+1.
func readRecordsAfter(ctx context.Context, st jetstream.Stream, subj string, a after) ([]message.Message, read, error) {
	wait := retryMin
	for {
		log, r, err := readOnce(ctx, st, subj, a)
		if err == nil || !(transient(err) || errors.Is(err, errMissed)) || ctx.Err() != nil {
			return log, r, err
		}
		if clock.Sleep(ctx, wait) != nil {
			return log, r, err
		}
		wait = min(2*wait, retryMax)
	}
}

// transient reports whether err says that JetStream did not answer for
// now (no responders, a time-out), rather than what it holds.
func transient(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// readOnce is one attempt of readRecords: a consumer of its own on subj
// (ephemeral, in memory, no acknowledgements), the records pulled in as
// few requests as they fit (a pull of all of them, as many as the last
// record's index says, when they are at most readBatch), each decoded as
// it comes. A delivery missed (the consumer's sequence skips one) fails
// the attempt with errMissed: it is tried again, never taken for a hole
// in the ledger. After a snapshot (a.from > 0) the consumer starts at
// stream sequence a.from, and records of index a.base or less are not
// kept.
func readOnce(ctx context.Context, st jetstream.Stream, subj string, a after) ([]message.Message, read, error) {
	last, err := st.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, read{last: a.base}, nil
	}
	if err != nil {
		return nil, read{}, fmt.Errorf("cluster: read %s: %w", subj, err)
	}
	r := read{last: a.base, lastSeq: last.Sequence}
	if last.Sequence < a.from {
		return nil, r, nil // nothing stored after the snapshot
	}
	// The consumer's creation is bounded on its own: the cluster may place
	// it on a server that is down (a replica of the stream not yet seen
	// gone), and then no answer ever comes; the read is tried again, its
	// consumer placed anew.
	cctx, cancel := context.WithTimeout(ctx, readCreateTimeout)
	defer cancel()
	cc := jetstream.ConsumerConfig{
		Description:       "read of " + subj,
		FilterSubject:     subj,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: readIdle,
		MemoryStorage:     true,
		Replicas:          1,
	}
	if a.from > 0 {
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, a.from
	}
	cons, err := st.CreateConsumer(cctx, cc)
	if err != nil {
		return nil, read{}, fmt.Errorf("cluster: read %s: %w", subj, err)
	}
	defer dropConsumer(st, cons)
	size := readBatch
	if n, err := strconv.ParseUint(last.Header.Get(indexHeader), 10, 64); err == nil && n >= a.base && n-a.base < readBatch {
		size = int(n-a.base) + readSlack // the last record's index: about as many records as stored
	}
	recs := make([]indexed, 0, size)
	var bad error
	empty := 0
	next := uint64(1) // the consumer sequence of the next delivery
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return nil, read{}, fmt.Errorf("cluster: read %s: %w", subj, context.Cause(ctx))
		}
		// What is stored comes at once (no wait); after an empty answer,
		// one wait of a second for a late delivery, then the read fails.
		var batch jetstream.MessageBatch
		if empty == 0 {
			batch, err = cons.FetchNoWait(size)
		} else {
			batch, err = cons.Fetch(size, jetstream.FetchMaxWait(time.Second))
		}
		if err != nil {
			return nil, read{}, fmt.Errorf("cluster: read %s: %w", subj, err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return nil, read{}, fmt.Errorf("cluster: read %s: %w", subj, err)
			}
			if meta.Sequence.Consumer != next {
				return nil, read{}, fmt.Errorf("cluster: read %s: %w: delivery %d came after %d", subj, errMissed, meta.Sequence.Consumer, next-1)
			}
			next++
			seq := meta.Sequence.Stream
			if seq >= last.Sequence {
				done = true
			}
			rec, err := decodeRecord(m.Headers(), m.Data(), seq)
			if err != nil && bad == nil {
				bad = fmt.Errorf("cluster: read %s: %w", subj, err)
			}
			if err == nil && rec.index > a.base {
				recs = append(recs, rec)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, read{}, fmt.Errorf("cluster: read %s: %w", subj, err)
		}
		switch {
		case got > 0:
			empty = 0
		case empty > 0:
			return nil, read{}, fmt.Errorf("cluster: read %s: %w: nothing delivered before stream sequence %d, the last record stored", subj, errMissed, last.Sequence)
		default:
			empty++
		}
	}
	log, n, err := inOrder(recs, subj, bad, a.base)
	r.last = n
	return log, r, err
}

// readCreateTimeout bounds the creation of a read's consumer (an attempt
// of readRecords).
const readCreateTimeout = 2 * time.Second

// readSlack is how many records more than the last record's index a
// read's first pull asks for: room for records stored twice, and for an
// earlier owner's orphans, without a second pull.
const readSlack = 64

// errMissed is wrapped by the error of a read attempt that missed a
// delivery: the read is tried again.
var errMissed = errors.New("a delivery of the read was missed")

// readIdle is how long the server keeps the consumer of a read
// or a watch whose process went away without deleting it.
const readIdle = 30 * time.Second

// dropConsumer deletes the consumer of a read or a watch once done (the
// server would keep it for its inactivity threshold, and thousands of
// restores at once would fill the stream's bound of consumers). Its
// context is its own: a read ended by its context still deletes it.
func dropConsumer(st jetstream.Stream, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
	defer cancel()
	_ = st.DeleteConsumer(ctx, info.Name) // a failure: it ends after readIdle
}

// dropTimeout bounds the deletion of a read's consumer.
const dropTimeout = 5 * time.Second

// decodeRecord decodes one stored record.
func decodeRecord(h nats.Header, data []byte, seq uint64) (indexed, error) {
	idx, err := strconv.ParseUint(h.Get(indexHeader), 10, 64)
	if err != nil || idx == 0 {
		return indexed{}, fmt.Errorf("%w: stream sequence %d: no valid %s header (%q)", ErrBadRecord, seq, indexHeader, h.Get(indexHeader))
	}
	m, err := message.UnmarshalMessage(data)
	if err != nil {
		return indexed{}, fmt.Errorf("%w: stream sequence %d (ledger index %d): %w", ErrBadRecord, seq, idx, err)
	}
	epoch, _ := strconv.ParseUint(h.Get(jetstream.ExpectedLastSubjSeqHeader), 10, 64)
	return indexed{epoch: epoch, index: idx, seq: seq, msg: m}, nil
}

// errHole is wrapped by the error of a read whose last owner's records
// have a hole: a record never acknowledged, and later ones that were.
var errHole = errors.New("the ledger has a hole")

// ErrBadRecord is wrapped by the error of a read that met a record it
// could not decode (or with no ledger index): ReadTeam's and OpenLedger's
// (the read stops there), and the one Watch yields for such a record
// (the watch goes on).
var ErrBadRecord = errors.New("cluster: bad record")

// inOrder puts records in ledger order. Each owner writes under its claim
// (its epoch) and continues the ledger from what it read, so records are
// taken epoch by epoch, each in index order, one of each index (a publish
// retried past the stream's duplicate window is stored twice). A hole in
// an owner's records (one never acknowledged before it stopped, later
// ones acknowledged) ends that owner's part: the records after it are
// orphans, which the next owner, having read up to the hole, writes over;
// a hole in the last owner's part is an error wrapping errHole, returned
// with the records before it. base is the index of the record before the
// first of recs (a snapshot's, else 0): the last index returned counts
// from it. bad, a decode error, is joined to it, or
// returned alone when there is no hole.
func inOrder(recs []indexed, subj string, bad error, base uint64) ([]message.Message, uint64, error) {
	slices.SortStableFunc(recs, func(a, b indexed) int {
		if c := cmp.Compare(a.epoch, b.epoch); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
	var kept []message.Message
	var hole error
	for i := 0; i < len(recs); {
		j := i
		for j < len(recs) && recs[j].epoch == recs[i].epoch {
			j++
		}
		group := recs[i:j]
		i = j
		if first := group[0].index; first <= base+uint64(len(kept)) {
			kept = kept[:first-1-base] // an earlier owner's orphans, written over
		}
		hole = nil
		for _, r := range group {
			want := base + uint64(len(kept)) + 1
			if r.index < want {
				continue // a duplicate
			}
			if r.index > want {
				hole = fmt.Errorf("cluster: read %s: %w: record %d is missing (the next stored is %d, at stream sequence %d)",
					subj, errHole, want, r.index, r.seq)
				break
			}
			kept = append(kept, r.msg)
		}
	}
	if hole != nil {
		return kept, base + uint64(len(kept)), errors.Join(hole, bad)
	}
	return kept, base + uint64(len(kept)), bad
}
