package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// serverChildEnv makes the test binary run as one NATS server of a
// cluster (TestMain); its value is the server's options as JSON
// (serverSpec).
const serverChildEnv = "AKGENTIC_CLUSTER_SERVER_CHILD"

// serverSpec is what a server child process runs: its name, its route
// port, the routes to every server of the cluster and its storage.
type serverSpec struct {
	Name        string `json:"name"`
	ClusterPort int    `json:"cluster_port"`
	Routes      string `json:"routes"`
	Dir         string `json:"dir"`
}

// runServerChild is the server child: a JetStream server of a
// three-server cluster on loopback; once it takes connections it says
// "ready <client URL>" on stdout, then runs until it is killed or its
// stdin ends (the test process gone). It returns the exit code.
func runServerChild(spec string) int {
	var sp serverSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		fmt.Println("error: the server spec:", err)
		return 2
	}
	s, err := server.NewServer(&server.Options{
		ServerName: sp.Name,
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   sp.Dir,
		Cluster:    server.ClusterOpts{Name: "akgentic", Host: "127.0.0.1", Port: sp.ClusterPort},
		Routes:     server.RoutesFromStr(sp.Routes),
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	s.Start()
	if !s.ReadyForConnections(time.Minute) {
		fmt.Println("error: not ready for connections")
		return 3
	}
	fmt.Println("ready", s.ClientURL())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	s.Shutdown()
	s.WaitForShutdown()
	return 0
}

// procServer is a NATS server running as a child process.
type procServer struct {
	name   string
	url    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

// kill ends the server with SIGKILL and waits for the process.
func (p *procServer) kill() error {
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	_ = p.cmd.Wait() // "signal: killed"
	return nil
}

// procServers starts a three-server JetStream cluster as three child
// processes (the test binary run again as servers) on loopback, with
// random free ports and their storage under a temporary directory, and
// waits until JetStream answers (its meta leader elected). Every server
// is killed at the end of the test.
func procServers(t *testing.T, ctx context.Context) []*procServer {
	t.Helper()
	// The route ports are found free, then closed and handed to the
	// servers: another process may take one meanwhile, and that server
	// never gets ready. New ports, up to three times.
	var last error
	for range 3 {
		servers, err := startProcServers(t, ctx)
		if err == nil {
			waitJetStream(t, ctx, servers)
			return servers
		}
		for _, s := range servers {
			_ = s.kill()
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	t.Fatalf("a three-server cluster of processes did not start: %v", last)
	return nil
}

// startProcServers starts the three server processes and waits for each
// to say it is ready.
func startProcServers(t *testing.T, ctx context.Context) ([]*procServer, error) {
	t.Helper()
	ports, routes := routePorts(t)
	dir := t.TempDir()
	var servers []*procServer
	var lines []chan string
	for i, port := range ports {
		spec, err := json.Marshal(serverSpec{Name: fmt.Sprint("s", i), ClusterPort: port,
			Routes: strings.Join(routes, ","), Dir: filepath.Join(dir, fmt.Sprint("s", i))})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), serverChildEnv+"="+string(spec))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		_ = stdin // kept open until Wait closes it: the child runs until then
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p := &procServer{name: fmt.Sprint("s", i), cmd: cmd, stderr: &bytes.Buffer{}}
		cmd.Stderr = p.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.kill() })
		servers = append(servers, p)
		line := make(chan string, 1)
		lines = append(lines, line)
		go func() { // ends when the child's stdout closes (Wait, at the latest in cleanup)
			r := bufio.NewReader(out)
			s, _ := r.ReadString('\n')
			line <- s
			_, _ = io.Copy(io.Discard, r)
		}()
	}
	for i, p := range servers {
		select {
		case s := <-lines[i]:
			f := strings.Fields(s)
			if len(f) != 2 || f[0] != "ready" {
				return servers, fmt.Errorf("server %s said %q", p.name, s)
			}
			p.url = f[1]
		case <-ctx.Done():
			return servers, fmt.Errorf("server %s did not say it is ready: %w", p.name, ctx.Err())
		}
	}
	return servers, nil
}

// waitJetStream waits until the cluster's JetStream answers an account
// information request (its meta leader elected), bounded by ctx.
func waitJetStream(t *testing.T, ctx context.Context, servers []*procServer) {
	t.Helper()
	nc, err := nats.Connect(procURLs(servers), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for {
		ctx1, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(ctx1)
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the cluster's JetStream did not answer: %v", err)
		}
	}
}

// procURLs is the client URLs of servers, comma-separated.
func procURLs(servers []*procServer) string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.url)
	}
	return strings.Join(urls, ",")
}

// connectProcs connects to every server of the cluster, reconnecting
// quickly and forever; closed at the end of the test.
func connectProcs(t *testing.T, servers []*procServer) *conn {
	t.Helper()
	c := &conn{reconnected: make(chan struct{}, 16), closed: make(chan struct{})}
	nc, err := nats.Connect(procURLs(servers),
		nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectJitter(0, 0),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case c.reconnected <- struct{}{}:
			default:
			}
		}),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
		nats.ClosedHandler(func(*nats.Conn) { close(c.closed) }))
	if err != nil {
		t.Fatal(err)
	}
	c.Conn = nc
	t.Cleanup(func() {
		nc.Close()
		<-c.closed
	})
	return c
}

// The three server processes form a cluster whose JetStream takes a
// replicated stream, and one killed with SIGKILL is gone.
func TestProcServersFormCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	servers := procServers(t, ctx)
	nc := connectProcs(t, servers)
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("the stream is not on three servers: %+v", info.Cluster)
	}
	if err := servers[0].kill(); err != nil {
		t.Fatal(err)
	}
	if servers[0].cmd.ProcessState == nil || servers[0].cmd.ProcessState.Success() {
		t.Fatalf("the killed server's process: %v", servers[0].cmd.ProcessState)
	}
}
