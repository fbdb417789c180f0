package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyTimeout bounds the wait for an embedded server to accept clients.
const readyTimeout = 10 * time.Second

// Embedded is an in-process NATS server with JetStream, listening on the
// loopback interface: the single-machine default, and what the tests run
// against. Close shuts it down.
type Embedded struct {
	opts *server.Options

	mu  sync.Mutex
	srv *server.Server
}

// RunEmbedded starts an in-process NATS server with JetStream, its file
// storage in dir (created if missing), listening on 127.0.0.1 on a port the
// system picks. It returns once the server accepts connections (URL).
func RunEmbedded(dir string) (*Embedded, error) {
	if dir == "" {
		return nil, errors.New("cluster: RunEmbedded: empty storage directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: RunEmbedded: %w", err)
	}
	opts := &server.Options{
		ServerName: "akgentic-embedded",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		HTTPPort:   0,
	}
	e := &Embedded{opts: opts}
	if err := e.start(); err != nil {
		return nil, err
	}
	// A restart (tests) comes back on the same port.
	addr, ok := e.srv.Addr().(*net.TCPAddr)
	if !ok {
		e.Close()
		return nil, fmt.Errorf("cluster: embedded NATS server listens on %v, not a TCP address", e.srv.Addr())
	}
	e.opts.Port = addr.Port
	return e, nil
}

// start starts a server with e's options and waits until it is ready.
func (e *Embedded) start() error {
	s, err := server.NewServer(e.opts)
	if err != nil {
		return fmt.Errorf("cluster: embedded NATS server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(readyTimeout) {
		s.Shutdown()
		s.WaitForShutdown()
		return fmt.Errorf("cluster: embedded NATS server not ready after %v (store %s)", readyTimeout, e.opts.StoreDir)
	}
	e.mu.Lock()
	e.srv = s
	e.mu.Unlock()
	return nil
}

// URL returns the client URL of the server, e.g. nats://127.0.0.1:41234;
// the same across a restart.
func (e *Embedded) URL() string {
	return fmt.Sprintf("nats://%s:%d", e.opts.Host, e.opts.Port)
}

// Close shuts the server down and waits until it has stopped; what
// JetStream stored stays in the directory. Calling it again does nothing.
func (e *Embedded) Close() {
	e.mu.Lock()
	s := e.srv
	e.srv = nil
	e.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// restart starts the server again after Close, on the same port with the
// same storage (tests: a NATS restart while a team runs).
func (e *Embedded) restart() error {
	e.mu.Lock()
	running := e.srv != nil
	e.mu.Unlock()
	if running {
		return errors.New("cluster: embedded NATS server: restart while running")
	}
	return e.start()
}
