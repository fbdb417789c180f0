package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Issue 14 (workers and placement): three workers run ten teams each;
// one loses its NATS connection. It stops its teams once their leases
// end unrenewed (it never runs a team it holds no lease for), and the
// other two take them over between them (each a share: 5/5 on a quiet
// machine), each team on
// exactly one worker, restored with its members.
func TestLostWorkerTeamsSpread(t *testing.T) {
	e := embedded(t)
	ctx := ctxT(t)
	const perWorker = 10
	resumed := make(chan uuid.UUID, 3*perWorker)
	var workers [3]*Worker
	var conns [3]*conn
	teams := map[uuid.UUID]*orchestrator.Team{} // the first worker's
	for i := range workers {
		conns[i] = connect(t, e)
		cfg := Config{Logger: discard, Lease: testLease, Owner: fmt.Sprint("w", i), resumed: func(id uuid.UUID) { resumed <- id }}
		w, err := StartWorker(ctx, conns[i].Conn, system(t), cfg, counters)
		if err != nil {
			t.Fatal(err)
		}
		workers[i] = w
		t.Cleanup(func() {
			err := w.Close(context.Background())
			if i > 0 && err != nil { // the first one's connection is closed
				t.Error(err)
			}
		})
		for range perWorker {
			team, err := w.Create(ctx, "counters", nil)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				teams[team.ID()] = team
			}
		}
	}

	for id := range teams { // every record so far acknowledged
		if _, err := acked(ctx, teams[id], workers[0].ledgerOf(id)); err != nil {
			t.Fatal(err)
		}
	}
	conns[0].Close() // the first worker is cut off from NATS
	for id, team := range teams {
		select {
		case <-team.Done():
		case <-ctx.Done():
			t.Fatalf("team %s still runs on the worker that lost its connection", id)
		}
	}
	took := map[string]int{}
	for range teams {
		var id uuid.UUID
		select {
		case id = <-resumed:
		case <-ctx.Done():
			t.Fatalf("only %d of the %d teams were taken over", took["w1"]+took["w2"], len(teams))
		}
		if teams[id] == nil {
			t.Fatalf("team %s, not the lost worker's, was taken over", id)
		}
		on1, on2 := workers[1].team(id), workers[2].team(id)
		switch {
		case on1 != nil && on2 != nil:
			t.Fatalf("team %s runs on two workers", id)
		case on1 != nil:
			took["w1"]++
			on2 = on1
		case on2 != nil:
			took["w2"]++
		default:
			t.Fatalf("team %s taken over but on no worker", id)
		}
		if ms, err := on2.Members(ctx); err != nil || len(ms) != 3 {
			log, rerr := ReadTeam(ctx, conns[1].Conn, id, Config{})
			var types []string
			for _, m := range log {
				types = append(types, message.TypeName(m)+"/"+m.Envelope().Sender.Name())
			}
			t.Fatalf("team %s resumed with members %v, %v; want @Human, a and b; log %v %v", id, ms, err, types, rerr)
		}
	}
	t.Logf("the lost worker's %d teams went to %v", len(teams), took)
	// The fewest-teams rule reads the other workers' counts from their
	// leases, which lag a takeover by up to a heartbeat: on a quiet machine
	// the split is 5/5, under a loaded -race run it was once 8/2. What must
	// hold is that both survivors take a share.
	if took["w1"] < 2 || took["w2"] < 2 {
		t.Fatalf("the lost worker's teams did not spread over both survivors (the fewest-teams rule): %v", took)
	}
}
