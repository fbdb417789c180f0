package mcp_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/tool/mcp"
	"github.com/akgentic/akgentic-go/internal/npmtest"
)

// The official MCP reference servers, pinned by testdata/refservers'
// package-lock.json and installed by npmtest (once per machine).
type reference struct {
	node       string
	everything string // the everything server's entry point
	filesystem string // server-filesystem's
}

func referenceServers(t *testing.T) reference {
	t.Helper()
	dir := npmtest.Install(t, filepath.Join("testdata", "refservers"))
	return reference{
		node:       npmtest.Node(t),
		everything: npmtest.Bin(t, dir, "mcp-server-everything"),
		filesystem: npmtest.Bin(t, dir, "mcp-server-filesystem"),
	}
}

// everythingStdio is the everything server over stdio. Its command is a
// shell that writes the server's process id to pidFile before it becomes
// the server, so that a test can kill it.
func (r reference) everythingStdio(t *testing.T, name string) (s mcp.Server, pidFile string) {
	t.Helper()
	pidFile = filepath.Join(t.TempDir(), "pid")
	return mcp.Server{Name: name, Command: []string{"/bin/sh", "-c", `echo $$ > "$0"; exec "$1" "$2" stdio`, pidFile, r.node, r.everything}}, pidFile
}

// filesystemStdio is server-filesystem over stdio, allowed dirs only.
func (r reference) filesystemStdio(name string, dirs ...string) mcp.Server {
	return mcp.Server{Name: name, Command: append([]string{r.node, r.filesystem}, dirs...)}
}

// readPID reads the process id a server's shell wrote.
func readPID(t *testing.T, pidFile string) int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return pid
}

// httpEverything is the everything server over streamable HTTP, a node
// process on a loopback port; restart kills it and starts another on the
// same port (a server that lost every session).
type httpEverything struct {
	t    *testing.T
	r    reference
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been reaped
	post chan struct{} // a value per MCP POST request the server logs
}

func (r reference) everythingHTTP(t *testing.T) *httpEverything {
	t.Helper()
	h := &httpEverything{t: t, r: r, post: make(chan struct{}, 64)}
	for attempt := 0; ; attempt++ {
		h.port = freePort(t)
		err := h.start()
		if err == nil {
			break
		}
		if attempt == 4 || !strings.Contains(err.Error(), "already in use") {
			t.Fatal(err)
		}
	}
	t.Cleanup(h.kill)
	return h
}

// server is the card's configuration for it.
func (h *httpEverything) server(name string) mcp.Server {
	return mcp.Server{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", h.port)}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs the server and returns once it listens (it says so on
// stderr), or with what it said when it exited first.
func (h *httpEverything) start() error {
	cmd := exec.Command(h.r.node, h.r.everything, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(h.port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	ready := make(chan struct{})
	var said strings.Builder
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // stdout: a line per request
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "Received MCP POST request" {
				select {
				case h.post <- struct{}{}:
				default:
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			said.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "listening on port") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() {
		wg.Wait()
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-ready:
	case <-done:
		return fmt.Errorf("the everything server exited before it listened: %s", said.String())
	case <-actortest.Context(h.t).Done():
		_ = cmd.Process.Kill()
		<-done
		return errors.New("the everything server did not listen in time")
	}
	h.mu.Lock()
	h.cmd, h.done = cmd, done
	h.mu.Unlock()
	return nil
}

// kill kills the server (SIGKILL) and reaps it.
func (h *httpEverything) kill() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// restart kills the server and starts a new one on the same port.
func (h *httpEverything) restart() {
	h.t.Helper()
	h.kill()
	if err := h.start(); err != nil {
		h.t.Fatal(err)
	}
}

// drainPosts forgets the POST requests logged so far.
func (h *httpEverything) drainPosts() {
	for {
		select {
		case <-h.post:
		default:
			return
		}
	}
}

// kill9 kills a process (SIGKILL) a card started; the card reaps it.
func kill9(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}

var _ = io.EOF
