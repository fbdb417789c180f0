package cluster

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(serverChildEnv); spec != "" { // a NATS server of procServers
		os.Exit(runServerChild(spec))
	}
	if spec := os.Getenv(workerProcEnv); spec != "" { // a worker of the worker-process tests
		os.Exit(runWorkerProc(spec))
	}
	// actortest.Context's bound, for these tests' waits on NATS.
	actortest.Timeout = testTimeout
	goleak.VerifyTestMain(m)
}

// testTimeout bounds every wait of a test on NATS (a connection, an ack, a
// read); a healthy run takes milliseconds, a loaded -race run with child
// processes much longer than actortest's default.
const testTimeout = 20 * time.Second

// embedded starts a server in a temporary directory, closed at the end of
// the test.
func embedded(t *testing.T) *Embedded {
	t.Helper()
	e, err := RunEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// conn is a client connection to e that reconnects quickly and forever,
// closed at the end of the test. Its reconnected channel receives a value
// after every reconnection.
type conn struct {
	*nats.Conn
	reconnected chan struct{}
	closed      chan struct{}
}

func connect(t *testing.T, e *Embedded) *conn {
	t.Helper()
	c := &conn{reconnected: make(chan struct{}, 16), closed: make(chan struct{})}
	nc, err := nats.Connect(e.URL(),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case c.reconnected <- struct{}{}:
			default:
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(c.closed) }),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}), // not the default's stderr
	)
	if err != nil {
		t.Fatal(err)
	}
	c.Conn = nc
	t.Cleanup(func() {
		nc.Close()
		<-c.closed // the client's goroutines have ended
	})
	return c
}

// TestEmbeddedStoresAcrossRestart: the embedded server takes
// JetStream publishes on loopback, keeps them in its directory across a
// restart on the same URL, and leaves no goroutine behind (TestMain).
func TestEmbeddedStoresAcrossRestart(t *testing.T) {
	e := embedded(t)
	ctx := actortest.Context(t)
	nc := connect(t, e)
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, "t.a", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	url := e.URL()
	e.Close()
	e.Close() // twice: nothing
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	if e.URL() != url {
		t.Fatalf("URL after restart = %s, want %s", e.URL(), url)
	}
	select {
	case <-nc.reconnected:
	case <-ctx.Done():
		t.Fatal("the client did not reconnect after the restart")
	}
	m, err := st.GetLastMsgForSubject(ctx, "t.a")
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "one" || m.Sequence != ack.Sequence {
		t.Fatalf("after restart: %q at %d, want %q at %d", m.Data, m.Sequence, "one", ack.Sequence)
	}
	if err := e.restart(); err == nil {
		t.Fatal("restart of a running server: no error")
	}
}

// TestRunEmbeddedBadDir: a clear error, no server.
func TestRunEmbeddedBadDir(t *testing.T) {
	if _, err := RunEmbedded(""); err == nil {
		t.Fatal("RunEmbedded(\"\"): no error")
	}
	f := t.TempDir() + "/file"
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := RunEmbedded(f + "/sub")
	if err == nil {
		t.Fatal("RunEmbedded under a file: no error")
	}
	var pe interface{ Unwrap() error }
	if !errors.As(err, &pe) {
		t.Fatalf("error %v wraps nothing", err)
	}
}

// connectB is a plain connection for benchmarks.
func connectB(b *testing.B, e *Embedded) *nats.Conn {
	b.Helper()
	nc, err := nats.Connect(e.URL(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		b.Fatal(err)
	}
	return nc
}
