package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// threeServers starts a three-server JetStream cluster in process, on
// loopback, each with its storage under a temporary directory; every
// server still running is shut down at the end of the test.
func threeServers(t testing.TB) []*server.Server {
	t.Helper()
	// The route ports are found free, then closed and handed to the servers:
	// another server of the test binary may take one meanwhile, and the
	// server that wanted it then never gets ready. A new set of ports, up
	// to three times, rather than a flaky test.
	var last string
	for range 3 {
		servers, notReady := startThreeServers(t)
		if notReady == "" {
			t.Cleanup(func() {
				for _, s := range servers {
					s.Shutdown()
					s.WaitForShutdown()
				}
			})
			return servers
		}
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
		last = notReady
	}
	t.Fatalf("server %s not ready, three times with new ports", last)
	return nil
}

// startThreeServers starts a three-server JetStream cluster on fresh ports
// and returns the name of a server that did not get ready, if one did not.
func startThreeServers(t testing.TB) (servers []*server.Server, notReady string) {
	t.Helper()
	ports, routes := routePorts(t)
	dir := t.TempDir()
	for i := range ports {
		opts := &server.Options{
			ServerName: fmt.Sprint("s", i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   filepath.Join(dir, fmt.Sprint("s", i)),
			Cluster:    server.ClusterOpts{Name: "akgentic", Host: "127.0.0.1", Port: ports[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:      true,
			NoSigs:     true,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			for _, started := range servers {
				started.Shutdown()
				started.WaitForShutdown()
			}
			t.Fatal(err)
		}
		s.Start()
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(3 * readyTimeout) { // a clustered JetStream waits for its meta leader: slow under a loaded -race run
			return servers, s.Name()
		}
	}
	return servers, ""
}

// The server leading the team's stream is stopped mid-run; no acknowledged
// record is lost, none is stored twice, and the team goes on.
func TestR3StreamLeaderStopped(t *testing.T) {
	servers := threeServers(t)
	// Three servers, an election after the leader stops and one record in
	// flight at a time (R3): slower than the other tests under a loaded
	// -race run, so a longer bound than actortest.Context's.
	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	cfg := Config{Logger: discard, Replicas: 3}
	nc := connectCluster(t, ctx, servers, cfg)
	c := &conn{Conn: nc}
	l, team, sys := newTeam(t, ctx, c, cfg)
	a, _ := spawnCounters(t, ctx, team)
	ask(t, ctx, sys, a, 10)
	if _, err := acked(ctx, team, l); err != nil {
		t.Fatal(err)
	}

	info, err := l.st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("the stream is not replicated on three servers: %+v", info.Cluster)
	}
	leader := info.Cluster.Leader
	for _, s := range servers {
		if s.Name() == leader {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	ask(t, ctx, sys, a, 10) // the team goes on while a new leader is elected
	assertStored(t, ctx, team, l)
	info, err = l.st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster.Leader == leader {
		t.Fatalf("the stream's leader is still %s, the stopped server", leader)
	}
	stopClean(t, ctx, team, l)
}

// connectCluster connects to every server of the cluster, closed at the
// end of the test, once the cluster took the stream of cfg (its JetStream
// leader elected: no event to wait on, so the stream's creation is tried
// until it succeeds, bounded by ctx).
func connectCluster(t testing.TB, ctx context.Context, servers []*server.Server, cfg Config) *nats.Conn {
	t.Helper()
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(strings.Join(urls, ","),
		nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		<-closed
	})
	full, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for {
		ctx1, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := ensureStream(ctx1, js, full)
		cancel()
		if err == nil {
			return nc
		}
		if ctx.Err() != nil {
			t.Fatalf("the cluster did not elect a JetStream leader: %v", err)
		}
	}
}

// routePorts picks three free loopback ports for a three-server cluster's
// routes, and their route URLs, known to all three.
func routePorts(t testing.TB) (ports [3]int, routes []string) {
	t.Helper()
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return ports, routes
}
