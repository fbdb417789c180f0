package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// faultRepeatsEnv, when set to a number, runs each case of
// TestServerKilledWhileInputsFlow that many times (each on a cluster of its
// own); once by default.
const faultRepeatsEnv = "AKGENTIC_CLUSTER_FAULT_REPEATS"

// faultLease is the lease of the server fault tests: at least ten seconds
// on a replicated cluster. A server's fault does not wait for it.
const faultLease = 10 * time.Second

// faultLeaseBucket is the lease when the leases bucket's leader is killed:
// its election (4 to 9 s seen) can outlast what is left of a 10 s lease
// after its last renewal, and a lease lost that way takes the team through
// a stop and a takeover. With 20 s the test pins the server's fault alone.
// faultShortLeaseEnv set to 1 runs the case at faultLease too, the path
// through a lease lost in the election.
const faultLeaseBucket = 20 * time.Second

// faultShortLeaseEnv adds the leases-bucket case at faultLease.
const faultShortLeaseEnv = "AKGENTIC_CLUSTER_FAULT_SHORT_LEASE"

// The server leading one of the cluster's streams (the team's records, the
// inbox, the leases bucket's) is killed with SIGKILL while a person's inputs
// flow to a team of replicas 3; inputs whose send fails meanwhile are sent
// again with the same key. Every input is run exactly once (one turn, one
// close), the ledger has no duplicate record and no hole, the counter saw
// each input once, and the stream has a new leader.
//
// By default only the records stream's case runs here: the three run with
// the worker as a process in TestServerKilledUnderAWorkerProcess. With
// faultRepeatsEnv set, all three run here too, that many times.
func TestServerKilledWhileInputsFlow(t *testing.T) {
	repeats := procRepeats(t)
	cases := serverFaults()
	if os.Getenv(faultRepeatsEnv) == "" {
		cases = cases[:1]
	}
	if os.Getenv(faultShortLeaseEnv) == "1" {
		cases = append(cases, serverFault{"leases-short-lease", leasesStream, faultLease})
	}
	for _, tc := range cases {
		for r := range repeats {
			t.Run(fmt.Sprintf("%s/%d", tc.name, r), func(t *testing.T) {
				serverKilled(t, tc.stream, tc.lease)
			})
		}
	}
}

// serverFault is a case of the server fault tests: the stream whose
// leader is killed, and the lease the workers run on.
type serverFault struct {
	name   string
	stream func(Config) string
	lease  time.Duration
}

// leasesStream is the stream of the leases bucket.
func leasesStream(c Config) string { return "KV_" + c.bucketName() }

// serverFaults are the server fault tests' cases: the leader of the
// records stream, of the inbox, of the leases bucket killed.
func serverFaults() []serverFault {
	return []serverFault{
		{"records", func(c Config) string { return c.Stream }, faultLease},
		{"inbox", func(c Config) string { return c.inboxStream() }, faultLease},
		{"leases", leasesStream, faultLeaseBucket},
	}
}

// faultInputs is how many inputs a fault test sends; the leader is killed
// before the input at faultKillAt.
const (
	faultInputs = 24
	faultKillAt = 8
)

// answers records when each input was first acknowledged by the worker
// (its turn's close durable), and signals every acknowledgement.
type answers struct {
	mu    sync.Mutex
	first map[uuid.UUID]time.Time
	ch    chan struct{}
}

func (a *answers) done(id uuid.UUID) {
	a.mu.Lock()
	if _, ok := a.first[id]; !ok {
		a.first[id] = time.Now()
	}
	a.mu.Unlock()
	select {
	case a.ch <- struct{}{}:
	default:
	}
}

// wait waits until every input of ids is acknowledged: its
// acknowledgement confirmed to the worker, or, every few seconds, found
// done by settled (the turn closed in the ledger, the input gone from the
// inbox: an acknowledgement stored whose confirmation was lost, in an
// election say). diagnose, on a failure, tells what is known of the
// missing ones.
func (a *answers) wait(t *testing.T, ctx context.Context, ids []uuid.UUID, settled func(missing []uuid.UUID) []uuid.UUID, diagnose func(missing []uuid.UUID) string) {
	t.Helper()
	tick := time.NewTicker(settledPoll)
	defer tick.Stop()
	for {
		a.mu.Lock()
		var missing []uuid.UUID
		for _, id := range ids {
			if _, ok := a.first[id]; !ok {
				missing = append(missing, id)
			}
		}
		a.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-a.ch:
		case <-tick.C: // a poll of the ledger and the inbox, with the test's deadline
			for _, id := range settled(missing) {
				t.Logf("input %s: its turn is closed in the ledger and the inbox no longer holds it, but its acknowledgement was never confirmed to the worker", id)
				a.done(id)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d inputs never acknowledged: %s", len(missing), len(ids), diagnose(missing))
		}
	}
}

// settledPoll is how often answers.wait looks in the ledger and the inbox
// for inputs done whose acknowledgement was not confirmed.
const settledPoll = 5 * time.Second

// closedAndGone returns the inputs of ids whose turn the team's ledger
// closed (a delivery's, any of the first few), when the team's inbox
// holds no input at all.
func closedAndGone(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg Config, team uuid.UUID, ids []uuid.UUID) []uuid.UUID {
	rctx, cancel := context.WithTimeout(ctx, settledPoll)
	defer cancel()
	st, err := js.Stream(rctx, cfg.inboxStream())
	if err != nil {
		return nil
	}
	_, subj, err := teamShard(rctx, js, cfg, team)
	if err != nil {
		return nil
	}
	info, err := st.Info(rctx, jetstream.WithSubjectFilter(subj))
	if err != nil || info.State.Subjects[subj] != 0 {
		return nil
	}
	log, err := ReadTeam(rctx, nc, team, cfg)
	if err != nil {
		return nil
	}
	closed := closedIn(log)
	var out []uuid.UUID
	for _, id := range ids {
		for k := uint64(1); k <= 4; k++ {
			if closed[attemptID(id, k)] {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// inputsDiagnosis tells what the team's inbox consumer, its ledger and the
// worker's log say of the inputs missing.
func inputsDiagnosis(ctx context.Context, nc *nats.Conn, c *Client, cfg Config, team uuid.UUID, logs *logCapture, missing []uuid.UUID) string {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settledPoll)
	defer cancel()
	var b strings.Builder
	if r, _, err := teamShard(dctx, c.js, cfg, team); err != nil {
		fmt.Fprintf(&b, "the team's shard: %v; ", err)
	} else if cons, err := c.inbox.Consumer(dctx, shardConsumer(r)); err != nil {
		fmt.Fprintf(&b, "the inbox consumer: %v; ", err)
	} else if info, err := cons.Info(dctx); err != nil {
		fmt.Fprintf(&b, "the inbox consumer: %v; ", err)
	} else {
		fmt.Fprintf(&b, "the shard's inbox consumer: %d delivered unacknowledged, %d not delivered, %d redelivered; ", info.NumAckPending, info.NumPending, info.NumRedelivered)
	}
	log, err := ReadTeam(dctx, nc, team, cfg)
	closed := closedIn(log)
	for _, id := range missing {
		var in []string
		for k := uint64(1); k <= 4; k++ {
			if closed[attemptID(id, k)] {
				in = append(in, fmt.Sprint("closed by delivery ", k))
			}
		}
		fmt.Fprintf(&b, "input %s: %v (ledger read: %v); ", id, in, err)
	}
	b.WriteString("the worker's log about them:\n")
	for line := range strings.Lines(logs.String()) {
		for _, id := range missing {
			if strings.Contains(line, id.String()) || strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				b.WriteString(line)
				break
			}
		}
	}
	return b.String()
}

func (a *answers) at(id uuid.UUID) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.first[id]
	return at, ok
}

func serverKilled(t *testing.T, streamOf func(Config) string, lease time.Duration) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*testTimeout)
	defer cancel()
	servers := procServers(t, ctx)
	nc := connectProcs(t, servers)
	cfg := Config{Logger: discard, Replicas: 3, Lease: lease, Owner: "w"}
	full, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(ctx, nc.Conn, cfg) // makes the streams and the bucket, replicated
	if err != nil {
		t.Fatal(err)
	}
	ans := &answers{first: map[uuid.UUID]time.Time{}, ch: make(chan struct{}, 1)}
	logs := &logCapture{}
	wcfg := cfg
	wcfg.Logger = logs.logger()
	wcfg.inputDone = ans.done
	resumed := make(chan uuid.UUID, 16)
	wcfg.resumed = func(id uuid.UUID) { resumed <- id }
	sys := system(t)
	w, err := StartWorker(ctx, nc.Conn, sys, wcfg, counters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	teamID, err := c.Create(ctx, "counters", nil)
	if err != nil {
		t.Fatal(err)
	}
	team := w.team(teamID)
	if team == nil {
		t.Fatal("the created team is not on the worker")
	}
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	stream := streamOf(full)

	var (
		inputs   []uuid.UUID
		killed   string
		others   string // the leaders of the three streams before the kill
		killedAt time.Time
		election = make(chan time.Duration, 1)
		retries  int
		firstOK  time.Duration // the first send stored after the kill
	)
	for i := range faultInputs {
		if i == faultKillAt {
			others = fmt.Sprintf("records %s, inbox %s, leases %s", streamLeader(t, ctx, js, full.Stream),
				streamLeader(t, ctx, js, full.inboxStream()), streamLeader(t, ctx, js, "KV_"+full.bucketName()))
			killed = streamLeader(t, ctx, js, stream)
			for _, s := range servers {
				if s.name == killed {
					if err := s.kill(); err != nil {
						t.Fatal(err)
					}
				}
			}
			killedAt = time.Now()
			go func() { election <- newLeader(ctx, js, stream, killed, killedAt) }()
		}
		id, n := sendRetried(t, ctx, c, teamID, fmt.Sprint("k", i), fmt.Sprint("m", i))
		retries += n
		if i == faultKillAt {
			firstOK = time.Since(killedAt)
		}
		inputs = append(inputs, id)
	}
	elected := <-election
	if elected < 0 {
		t.Fatalf("stream %s got no leader other than %s, the killed server", stream, killed)
	}
	ans.wait(t, ctx, inputs,
		func(missing []uuid.UUID) []uuid.UUID { return closedAndGone(ctx, nc.Conn, js, full, teamID, missing) },
		func(missing []uuid.UUID) string { return inputsDiagnosis(ctx, nc.Conn, c, full, teamID, logs, missing) })
	firstAnswer := time.Duration(-1)
	for _, id := range inputs[faultKillAt:] {
		if at, ok := ans.at(id); ok && (firstAnswer < 0 || at.Sub(killedAt) < firstAnswer) {
			firstAnswer = at.Sub(killedAt)
		}
	}
	t.Logf("leaders before the kill: %s", others)
	t.Logf("stream %s: leader %s killed; new leader after %v; first send stored after %v (%d sends retried); first answer to an input sent after the kill %v",
		stream, killed, elected.Round(time.Millisecond), firstOK.Round(time.Millisecond), retries, firstAnswer.Round(time.Millisecond))

	// Every stream led again before the last checks and the worker's Close
	// (which writes the leases bucket): another stream may have been led by
	// the killed server too.
	for _, st := range []string{full.Stream, full.inboxStream(), "KV_" + full.bucketName()} {
		if newLeader(ctx, js, st, killed, killedAt) < 0 {
			t.Fatalf("stream %s got no leader other than %s, the killed server", st, killed)
		}
	}
	inboxEmpty(t, ctx, c, teamID)
	// A leases bucket without a leader until the lease's end (a lease after
	// the last renewal) makes the worker stop the team, its lease ended
	// unrenewed; it resumes the team from the stream. The inputs are still
	// run once each (checked below).
	if now := runningTeam(t, ctx, w, resumed, teamID); now != team {
		t.Logf("the worker stopped the team, its lease renewals failing during the election, and resumed it")
		team = now
	}
	if err := team.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, testTimeout)
	log, err := ReadTeam(rctx, nc.Conn, teamID, cfg) // a hole in the ledger is an error
	rcancel()
	if err != nil {
		t.Fatalf("the team's records after the kill: %v; %s", err, readDiagnosis(ctx, js, full, teamID))
	}
	assertUnique(t, log)
	assertRunOnce(t, log, inputs)
	if got, calls := total(t, ctx, sys, team, "a"); calls != faultInputs+1 || got != 2*(faultInputs+1) {
		t.Fatalf("a: total %d after %d calls; want %d after %d (each input once, then one more)",
			got, calls, 2*(faultInputs+1), faultInputs+1)
	}
}

// readDiagnosis tells what the records stream says of a team whose read
// failed: its leader and replicas, its last sequence, the team's last
// record and what one read attempt gives.
func readDiagnosis(ctx context.Context, js jetstream.JetStream, cfg Config, team uuid.UUID) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return fmt.Sprint("stream: ", err)
	}
	out := ""
	if info, err := st.Info(ctx); err == nil && info.Cluster != nil {
		out += fmt.Sprintf("leader %s, last sequence %d", info.Cluster.Leader, info.State.LastSeq)
		for _, r := range info.Cluster.Replicas {
			out += fmt.Sprintf(", replica %s current %v lag %d", r.Name, r.Current, r.Lag)
		}
	}
	subj := cfg.recordsSubject(team)
	if last, err := st.GetLastMsgForSubject(ctx, subj); err == nil {
		out += fmt.Sprintf("; the team's last record at sequence %d, index %s", last.Sequence, last.Header.Get(indexHeader))
	} else {
		out += fmt.Sprint("; the team's last record: ", err)
	}
	recs, _, err := readOnce(ctx, st, subj, after{})
	return out + fmt.Sprintf("; one read: %d records, %v", len(recs), err)
}

// runningTeam returns the team id as the worker runs it now: once it
// resumed it, when it stopped it.
func runningTeam(t *testing.T, ctx context.Context, w *Worker, resumed chan uuid.UUID, id uuid.UUID) *orchestrator.Team {
	t.Helper()
	for {
		if team := w.team(id); team != nil {
			select {
			case <-team.Done():
			default:
				return team
			}
		}
		select {
		case <-resumed:
		case <-ctx.Done():
			t.Fatal("the worker stopped the team and never resumed it")
		}
	}
}

// sendAttempt bounds one send of sendRetried.
const sendAttempt = 5 * time.Second

// sendRetried sends text to member a of the team with SendOnce under key,
// again with the same key while it fails (a stream without a leader for a
// moment), and returns the input's id and the number of failed sends.
func sendRetried(t *testing.T, ctx context.Context, c *Client, team uuid.UUID, key, text string) (uuid.UUID, int) {
	t.Helper()
	for n := 0; ; n++ {
		// Each attempt bounded: a request lost in the election (the leases
		// bucket's read, the inbox's publish) is not answered, and would
		// wait for the whole test's context.
		actx, cancel := context.WithTimeout(ctx, sendAttempt)
		id, err := c.SendOnce(actx, team, key, "a", text)
		cancel()
		if err == nil {
			return id, n
		}
		if errors.Is(err, ErrNoSuchTeam) && !errors.Is(err, errWasStopped) {
			// The team's lease is gone: no retry makes up for it.
			t.Fatalf("send %s: %v", key, err)
		}
		// A pause between sends, so that a failing send does not spin
		// while the stream elects a leader.
		select {
		case <-ctx.Done():
			t.Fatalf("send %s never stored: %v", key, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// streamLeader returns the name of the server leading stream, once it has
// one.
func streamLeader(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) string {
	t.Helper()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream %s is not replicated on three servers: %+v", stream, info.Cluster)
	}
	return info.Cluster.Leader
}

// newLeader waits until stream has a leader other than killed and returns
// how long after at; -1 when ctx ended first.
func newLeader(ctx context.Context, js jetstream.JetStream, stream, killed string, at time.Time) time.Duration {
	for {
		ctx1, cancel := context.WithTimeout(ctx, time.Second)
		var leader string
		if st, err := js.Stream(ctx1, stream); err == nil {
			if info, err := st.Info(ctx1); err == nil && info.Cluster != nil {
				leader = info.Cluster.Leader
			}
		}
		cancel()
		if leader != "" && leader != killed {
			return time.Since(at)
		}
		select { // a pause between asks, not to spin during the election
		case <-ctx.Done():
			return -1
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// assertRunOnce checks that the log holds, for each input, exactly one
// turn's message to its member and one close (whatever attempt ran it).
func assertRunOnce(t *testing.T, log []message.Message, inputs []uuid.UUID) {
	t.Helper()
	attempt := map[uuid.UUID]uuid.UUID{} // message id of an attempt → its input
	for _, in := range inputs {
		for n := uint64(1); n <= 8; n++ {
			attempt[attemptID(in, n)] = in
		}
	}
	sent, closed := map[uuid.UUID]int{}, map[uuid.UUID]int{}
	for _, m := range log {
		if sm, ok := m.(*message.SentMessage); ok && sm.Message != nil {
			if in, ok := attempt[sm.Message.Envelope().ID]; ok {
				sent[in]++
			}
		}
		if mid, ok := closes(m); ok {
			if in, ok := attempt[mid]; ok {
				closed[in]++
			}
		}
	}
	for i, in := range inputs {
		if sent[in] != 1 || closed[in] != 1 {
			t.Errorf("input %d (%s): sent %d times, closed %d times; want once each", i, in, sent[in], closed[in])
		}
	}
}
