package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// defaultLease is Config.Lease when 0.
const defaultLease = 10 * time.Second

// bucketName is the key-value bucket of the leases of cfg's teams.
func (c Config) bucketName() string { return c.Stream + "_LEASES" }

var validBucket = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// lease is the value of a team's key in the leases bucket.
type lease struct {
	Owner    string    `json:"owner"`
	Until    time.Time `json:"until"`
	Template string    `json:"template,omitempty"` // the template the team was made from
	Stopped  bool      `json:"stopped,omitempty"`  // stopped on purpose: resume it nowhere
	// Passive: the team is stopped while idle (Config.IdleAfter), held by
	// no worker, and activated by its next input.
	Passive bool `json:"passive,omitempty"`
	// WakeAt, on a passive lease, is when the team is activated though no
	// input came: the earliest deadline of the approvals its agents wait
	// for (a timer of its own, which a stopped team cannot keep); zero
	// when none. The holder of its shard activates it then.
	WakeAt time.Time `json:"wake_at,omitzero"`
	// Instance is the Worker that stored the lease (a random id per
	// Worker: two with the same Owner are told apart).
	Instance string `json:"instance,omitempty"`
	// Error is why the last worker that took the team could not resume it
	// (its lease released); empty once a worker resumed it.
	Error string `json:"error,omitempty"`
}

// presencePrefix begins the key of a worker's presence in the leases
// bucket: a key that is no team's id.
const presencePrefix = "worker."

// presence is the value of a worker's presence key: the worker, the
// templates it serves, the subject it serves them on (Subject + "." +
// template) and its end, renewed with the worker's leases.
type presence struct {
	Owner     string    `json:"owner"`
	Templates []string  `json:"templates"`
	Subject   string    `json:"subject"`
	Until     time.Time `json:"until"`
	// Teams is how many teams the worker runs (not its passive ones), as
	// of the presence's last store (every beat and every Create): the
	// load Client.Create places by (nil from an earlier version: counted
	// from the leases then).
	Teams *int `json:"teams,omitempty"`
	// Since is when the worker's presence began to last without a break:
	// its start, or its first renewal after its presence ended unrenewed
	// (the worker was paused, or cut off from JetStream, for longer than
	// its lease). A worker holding more than its share of shards hands
	// them over only to a worker present for settleBeats beats: a worker
	// back from a pause only to exit, or one just started that dies at
	// once, draws no handover (zero from an earlier version: settled).
	Since time.Time `json:"since,omitzero"`

	key string // its key and revision in the bucket (readBucket)
	rev uint64
}

// ownerToken is a key and subject token naming an owner (Config.Owner
// may hold characters neither allows, such as ':').
func ownerToken(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(h[:16])
}

// presenceKey is the key of an owner's presence in the leases bucket.
func presenceKey(owner string) string { return presencePrefix + ownerToken(owner) }

// workerSubject is the subject on which the worker named owner serves
// Client.Create for itself alone: the template's name follows it.
func (c Config) workerSubject(owner string) string { return c.Prefix + ".worker." + ownerToken(owner) }

// teamLease is a team's entry in the leases bucket.
type teamLease struct {
	id  uuid.UUID
	rev uint64
	lease
}

// readBucket reads every key of the leases bucket once: the teams'
// leases and the workers' presences, by revision. A key of neither kind,
// or whose value does not decode, is skipped.
//
// Keys renewed during the read come again, at their new revision, and a
// key renewed before its old value was delivered comes only then; the
// watcher's end of the initial values (and each entry's Delta) can come
// early under concurrent writes (nats-io/nats-server#4824). So it reads
// up to the bucket's last revision twice: up to the one at the start,
// past every initial value; then up to the one at that point, past every
// key renewed while the initial values were delivered.
func readBucket(ctx context.Context, kv jetstream.KeyValue) ([]teamLease, []presence, error) {
	watch, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer stopWatch(watch)
	teams := map[string]teamLease{}
	workers := map[string]presence{}
	revs := map[string]uint64{}
	var seen uint64 // the highest revision read
	for range 2 {
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, nil, err
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok {
			return nil, nil, fmt.Errorf("leases bucket status %T has no stream", st)
		}
		for last := bs.StreamInfo().State.LastSeq; seen < last; {
			var e jetstream.KeyValueEntry
			select {
			case e = <-watch.Updates():
			case <-ctx.Done():
				return nil, nil, context.Cause(ctx)
			}
			if e == nil {
				continue // the watcher's end of the initial values
			}
			seen = max(seen, e.Revision())
			applyEntry(e, teams, workers, revs)
		}
	}
	ts, ws := byRevision(teams, workers, revs)
	return ts, ws, nil
}

// stopWatch stops a watcher of the leases bucket, then takes what it
// still delivers until it closes its channel: a watcher stopped while its
// handler waits to deliver an entry (its channel full) would keep that
// goroutine forever. nats.go closes the channel once the watcher's
// subscription has ended.
func stopWatch(watch jetstream.KeyWatcher) {
	_ = watch.Stop()
	for range watch.Updates() {
	}
}

// readPresences reads the workers' presences alone (a watch of their keys,
// not of the whole bucket): O(workers), whatever the number of teams. A
// presence stored during the read may be missed (the watcher's end of the
// initial values can come early: see readBucket); placement then picks
// among the others.
func readPresences(ctx context.Context, kv jetstream.KeyValue) ([]presence, error) {
	watch, err := kv.Watch(ctx, presencePrefix+"*")
	if err != nil {
		return nil, err
	}
	defer stopWatch(watch)
	teams, workers, revs := map[string]teamLease{}, map[string]presence{}, map[string]uint64{}
	for {
		select {
		case e := <-watch.Updates():
			if e == nil {
				_, ws := byRevision(teams, workers, revs)
				return ws, nil
			}
			applyEntry(e, teams, workers, revs)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// leases returns the leases bucket of cfg, made when missing.
func leases(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	return untilReady(ctx, func(ctx context.Context) (jetstream.KeyValue, error) { return leasesOnce(ctx, js, cfg) })
}

// leasesOnce is one try of leases.
func leasesOnce(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: cfg.bucketName(), Description: "akgentic team leases",
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas, History: 1,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.bucketName())
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: leases bucket %s: %w", cfg.bucketName(), err)
	}
	return kv, nil
}

// unique stores this worker's presence for the first time, and fails when
// a live worker (its presence not ended) has this worker's Owner: two would
// take each other's teams for their own. The store is a compare-and-set,
// so of two workers starting with one Owner at once, one fails.
func (w *Worker) unique(ctx context.Context) error {
	data, until, err := w.presence()
	if err != nil {
		return err
	}
	key := presenceKey(w.cfg.Owner)
	e, err := untilReady(ctx, func(ctx context.Context) (jetstream.KeyValueEntry, error) {
		e, err := w.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, nil // told apart below
		}
		return e, err
	})
	if err == nil && e == nil {
		err = jetstream.ErrKeyNotFound
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		_, err = w.kv.Create(ctx, key, data)
	case err != nil:
		return fmt.Errorf("read the presence of Owner %q: %w", w.cfg.Owner, err)
	default:
		var p presence
		if json.Unmarshal(e.Value(), &p) == nil && p.Until.After(time.Now()) {
			return fmt.Errorf("a live worker has Owner %q (its presence ends at %s): Config.Owner must be unique to each Worker",
				w.cfg.Owner, p.Until.Format(time.RFC3339Nano))
		}
		_, err = w.kv.Update(ctx, key, data, e.Revision())
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("another worker with Owner %q started at the same time: Config.Owner must be unique to each Worker", w.cfg.Owner)
	}
	if err != nil {
		return fmt.Errorf("store this worker's presence: %w", err)
	}
	w.presentTill(until)
	return nil
}

// present stores (or renews) this worker's presence in the leases bucket,
// ending a lease from now.
func (w *Worker) present(ctx context.Context) error {
	data, until, err := w.presence()
	if err != nil {
		return err
	}
	if _, err := w.kv.Put(ctx, presenceKey(w.cfg.Owner), data); err != nil {
		return fmt.Errorf("store this worker's presence: %w", err)
	}
	w.presentTill(until)
	return nil
}

// presentSince is when this worker's presence began to last without a
// break (presence.Since), as of a presence to be stored now: when the
// last one stored (presentTill) ended before now, a new stretch begins.
func (w *Worker) presentSince(now time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since.IsZero() || (!w.presentUntil.IsZero() && now.After(w.presentUntil)) {
		w.since = now
	}
	return w.since
}

// presentTill notes the end of the presence just stored.
func (w *Worker) presentTill(until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.presentUntil = until
}

// presence is this worker's presence entry, ending a lease from now, and
// that end.
func (w *Worker) presence() ([]byte, time.Time, error) {
	names := make([]string, 0, len(w.tmpls))
	for name := range w.tmpls {
		names = append(names, name)
	}
	slices.Sort(names)
	w.mu.Lock()
	n := len(w.teams)
	w.mu.Unlock()
	now := time.Now()
	until := now.Add(w.cfg.Lease)
	data, err := json.Marshal(presence{Owner: w.cfg.Owner, Templates: names, Subject: w.cfg.workerSubject(w.cfg.Owner),
		Until: until.UTC(), Teams: &n, Since: w.presentSince(now).UTC()})
	return data, until, err
}

// newLease is this worker's lease of a team of template, ending a lease
// from now, stamped with the worker's instance (a team is held while the
// same instance holds its shard).
func (w *Worker) newLease(template string) lease {
	return lease{Owner: w.cfg.Owner, Until: time.Now().Add(w.cfg.Lease).UTC(), Template: template, Instance: w.instance}
}

// put stores a lease at the revision rev (compare-and-set). When the
// revision is not the key's but the key's lease is still this worker's
// (its own earlier write, whose answer was lost in a reconnection), it
// stores at the key's revision instead.
func (w *Worker) put(ctx context.Context, id uuid.UUID, l lease, rev uint64) (uint64, error) {
	l.Instance = w.instance
	data, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	n, err := w.kv.Update(ctx, id.String(), data, rev)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return n, err
	}
	e, gerr := w.kv.Get(ctx, id.String())
	if gerr != nil {
		return 0, err
	}
	var cur lease
	if json.Unmarshal(e.Value(), &cur) != nil {
		return 0, err
	}
	if cur.Stopped {
		return 0, fmt.Errorf("%w: %w", errStopped, err)
	}
	if cur.Instance != w.instance || cur.Stopped || e.Revision() < rev {
		return 0, err // another worker's (one with the same Owner included)
	}
	return w.kv.Update(ctx, id.String(), data, e.Revision())
}

// errStopped is put's error when a client stopped the team (Client.Stop).
var errStopped = errors.New("cluster: the team was stopped by a client")
