package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The server leading one of the cluster's streams (the teams' records,
// the inbox, the leases bucket's) is killed with SIGKILL while inputs flow
// to teams run by a worker process, the servers being processes too;
// inputs whose send fails meanwhile are sent again with the same key.
// Every input is answered, its turn begun and closed exactly once; the
// ledger has no hole and no record twice; every record a client saw
// through Watch is in the stream afterwards. (TestServerKilledWhileInputsFlow
// is the same fault with the worker in the test process, where the test
// can also read its counters.)
func TestServerKilledUnderAWorkerProcess(t *testing.T) {
	for _, tc := range serverFaults() {
		for r := range procRepeats(t) {
			t.Run(fmt.Sprintf("%s/%d", tc.name, r), func(t *testing.T) {
				serverKilledUnderProc(t, tc.stream, tc.lease)
			})
		}
	}
}

func serverKilledUnderProc(t *testing.T, streamOf func(Config) string, lease time.Duration) {
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	f := newFleetLease(t, ctx, true, lease)
	f.start("wa", false)
	f.ready(ctx, "wa")
	teams := f.createTeams(ctx, "counters", 2)
	f.watch(teams...)
	full := f.cfg.withDefaultsT(t)
	stream := streamOf(full)

	var (
		inputs   []procInput
		killed   string
		killedAt time.Time
		retries  int
		election = make(chan time.Duration, 1)
	)
	for i := range procInputs {
		if i == procFaultAt {
			killed = streamLeader(t, ctx, f.c.js, stream)
			for _, s := range f.servers {
				if s.name == killed {
					if err := s.kill(); err != nil {
						t.Fatal(err)
					}
				}
			}
			killedAt = time.Now()
			go func() { election <- newLeader(ctx, f.c.js, stream, killed, killedAt) }()
		}
		in, n, err := sendKeyed(ctx, f.c, teams[i%len(teams)], fmt.Sprint("k", i), "a", fmt.Sprint("input k", i))
		if err != nil {
			t.Fatal(err)
		}
		retries += n
		inputs = append(inputs, in)
	}
	elected := <-election
	if elected < 0 {
		t.Fatalf("stream %s got no leader other than %s, the killed server", stream, killed)
	}
	f.allAnswered(ctx, inputs)
	var first time.Duration = -1
	for _, in := range inputs[procFaultAt:] {
		if e, ok := f.event("wa", "done", in.id.String()); ok && (first < 0 || e.at.Sub(killedAt) < first) {
			first = e.at.Sub(killedAt)
		}
	}
	// Every stream led again before the ledger is read: the killed server
	// may have led another one too.
	for _, st := range []string{full.Stream, full.inboxStream(), "KV_" + full.bucketName()} {
		if newLeader(ctx, f.c.js, st, killed, killedAt) < 0 {
			t.Fatalf("stream %s got no leader other than %s, the killed server", st, killed)
		}
	}
	f.ledgerCheck(ctx, inputs, nil)              // no turn begun twice: no worker fault cut one
	if e, ok := f.event("", "resumed", ""); ok { // its inputs still ran once each (checked above)
		t.Logf("worker %s stopped team %v and resumed it: its lease lapsed during the election", e.worker, e.args)
	}
	for id, x := range f.owners(ctx) {
		if x.Owner != "wa" {
			t.Errorf("team %s is leased to %q after the fault, want wa", id, x.Owner)
		}
	}
	t.Logf("stream %s: leader %s killed; new leader after %v; %d sends retried; first answer to an input sent after the kill %v",
		stream, killed, elected.Round(time.Millisecond), retries, first.Round(time.Millisecond))
}
