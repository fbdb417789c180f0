package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Three workers starting at once on a fresh three-server cluster all start:
// the streams and the leases bucket one of them just made answer "no
// responders" for a moment (no leader elected yet), which is waited out,
// not taken for a failure.
func TestThreeWorkersStartOnAFreshCluster(t *testing.T) {
	servers := threeServers(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	var wg sync.WaitGroup
	for i := range 3 {
		closed := make(chan struct{})
		nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
			nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close(); <-closed })
		sys := system(t)
		wg.Go(func() {
			cfg := Config{Logger: discard, Replicas: 3, Owner: "w" + string(rune('0'+i))}
			w, err := StartWorker(ctx, nc, sys, cfg, counters)
			if err != nil {
				t.Errorf("worker %d: %v", i, err)
				return
			}
			t.Cleanup(func() {
				if err := w.Close(context.Background()); err != nil {
					t.Error(err)
				}
			})
		})
	}
	wg.Wait()
}
