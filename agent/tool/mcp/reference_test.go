package mcp_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/mcp"
	"github.com/akgentic/akgentic-go/internal/npmtest"
	"golang.org/x/sys/unix"
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

// waitExited waits until process pid has exited (it may not be reaped
// yet), without polling: a pidfd becomes readable then.
func waitExited(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone already
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(actortest.Timeout.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("process %d did not exit: %d %v", pid, n, err)
		}
		return
	}
}

// The everything server over both transports: its tools listed (not the
// one that runs only as a task, nor the roots one: the card advertises no
// roots), their annotations, its instructions in the system prompt, and
// calls of text, an image, structured content, an error and a
// long-running operation; closing is not an error (a Node child that
// outlives its closed stdin is stopped by SIGTERM).
func TestReferenceEverything(t *testing.T) {
	t.Parallel()
	r := referenceServers(t)
	stdio, _ := r.everythingStdio(t, "ev")
	h := r.everythingHTTP(t)
	for _, s := range []mcp.Server{stdio, h.server("ev")} {
		t.Run(map[bool]string{true: "stdio", false: "http"}[s.URL == ""], func(t *testing.T) {
			caps, err := (&mcp.Card{Servers: []mcp.Server{s}}).Attach(actortest.Context(t), &tool.Owner{Agent: &agentStub{}})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = caps.Close()
				}
			})
			tools := map[string]*llm.Tool{}
			for _, tl := range caps.Tools {
				tools[tl.Name] = tl
			}
			for _, name := range []string{"ev_echo", "ev_get-tiny-image", "ev_get-structured-content", "ev_get-sum", "ev_trigger-long-running-operation"} {
				if tools[name] == nil {
					t.Errorf("%s is not offered", name)
				}
			}
			for _, name := range []string{"ev_simulate-research-query", "ev_get-roots-list"} {
				if tools[name] != nil {
					t.Errorf("%s is offered, but cannot work with this client", name)
				}
			}
			if e := tools["ev_echo"]; e == nil || !e.ReadOnly || e.Destructive {
				t.Errorf("echo (readOnlyHint): %+v", e)
			}
			if len(caps.SystemPrompts) != 1 {
				t.Fatalf("%d system prompt sections, want the server's instructions", len(caps.SystemPrompts))
			}
			if p := caps.SystemPrompts[0](actortest.Context(t)); !strings.HasPrefix(p, "Instructions of the MCP server ev (its tools are named ev_<tool>):\n# Everything Server") {
				t.Errorf("instructions section %.200q", p)
			}

			if out, err := call(t, tools["ev_echo"], `{"message": "hello"}`); err != nil || out != "Echo: hello" {
				t.Errorf("echo: %q %v", out, err)
			}
			out, err := call(t, tools["ev_get-tiny-image"], `{}`)
			if err != nil || !regexp.MustCompile(`^Here's the image you requested:\n\[image image/png, \d+ bytes\]\nThe image above is the MCP logo.$`).MatchString(out) {
				t.Errorf("image: %.300q %v", out, err)
			}
			out, err = call(t, tools["ev_get-structured-content"], `{"location": "Chicago"}`)
			if err != nil || out != `{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}` {
				t.Errorf("structured content: %q %v", out, err)
			}
			if _, err := call(t, tools["ev_get-sum"], `{"a": "one", "b": 2}`); err == nil || !strings.HasPrefix(err.Error(), "MCP ") || !strings.Contains(err.Error(), "get-sum") {
				t.Errorf("get-sum with a string: %v", err)
			}
			out, err = call(t, tools["ev_trigger-long-running-operation"], `{"duration": 1, "steps": 2}`)
			if err != nil || out != "Long running operation completed. Duration: 1 seconds, Steps: 2." {
				t.Errorf("long-running operation: %q %v", out, err)
			}
			closed = true
			if err := caps.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
}

// server-filesystem over stdio: a text file comes once (not again as its
// structured copy), an image is described (not inlined as base64), a file
// outside the allowed directory is the server's refusal, and the write
// tools are marked destructive.
func TestReferenceFilesystem(t *testing.T) {
	t.Parallel()
	r := referenceServers(t)
	root, other := t.TempDir(), t.TempDir()
	text := strings.Repeat("a line of the file, as a model would read it\n", 1000) // 45 KB: under the 64 KiB cap once, not twice
	png := make([]byte, 270_448)
	copy(png, "\x89PNG\r\n\x1a\n")
	for name, b := range map[string][]byte{"notes.txt": []byte(text), "photo.png": png} {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(other, "secret.txt")
	if err := os.WriteFile(secret, []byte("not for the agent"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.filesystemStdio("fs", root)
	tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{s}})

	out, err := call(t, tools["fs_read_text_file"], fmt.Sprintf(`{"path": %q, "head": null, "tail": null}`, filepath.Join(root, "notes.txt")))
	if err != nil || out != text {
		t.Errorf("read_text_file: %d bytes (%v), want the file's %d", len(out), err, len(text))
	}
	out, err = call(t, tools["fs_read_media_file"], fmt.Sprintf(`{"path": %q}`, filepath.Join(root, "photo.png")))
	if err != nil || out != "[image image/png, 270448 bytes]" {
		t.Errorf("read_media_file: %.200q (%d bytes) %v", out, len(out), err)
	}
	_, err = call(t, tools["fs_read_text_file"], fmt.Sprintf(`{"path": %q, "head": null, "tail": null}`, secret))
	if err == nil || !strings.Contains(err.Error(), "Access denied - path outside allowed directories") || strings.Contains(err.Error(), "not for the agent") {
		t.Errorf("a file outside the roots: %v", err)
	}
	for name, want := range map[string][2]bool{ // read-only, destructive
		"fs_read_text_file":   {true, false},
		"fs_write_file":       {false, true},
		"fs_create_directory": {false, false},
	} {
		if tl := tools[name]; tl == nil || tl.ReadOnly != want[0] || tl.Destructive != want[1] {
			t.Errorf("%s: %+v, want read-only %v, destructive %v", name, tl, want[0], want[1])
		}
	}
	if w := owner.warnings(); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
}

// The everything server killed (SIGKILL) between calls over stdio: the
// card had seen the session end, so the next call starts a new server
// and the model never hears of it. Over HTTP, a server restarted between
// calls has lost the session (the reference server answers 400, not 404):
// the call is made again on a new session, unseen too. Killed during a
// call, the server costs that call (a tool error and a warning: it may
// have run), and the next one reconnects.
func TestReferenceKilled(t *testing.T) {
	t.Parallel()
	r := referenceServers(t)
	echo := func(t *testing.T, tl *llm.Tool, text string) {
		t.Helper()
		if out, err := call(t, tl, fmt.Sprintf(`{"message": %q}`, text)); err != nil || out != "Echo: "+text {
			t.Fatalf("echo %s: %q %v", text, out, err)
		}
	}
	t.Run("stdio between calls", func(t *testing.T) {
		s, pidFile := r.everythingStdio(t, "ev")
		tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{s}})
		echo(t, tools["ev_echo"], "before")
		before := readPID(t, pidFile)
		kill9(t, before)
		waitExited(t, before)
		echo(t, tools["ev_echo"], "after")
		if after := readPID(t, pidFile); after == before {
			t.Errorf("the killed server %d answered", before)
		}
		if w := owner.warnings(); len(w) != 0 {
			t.Errorf("warnings %q", w)
		}
	})
	t.Run("http restarted between calls", func(t *testing.T) {
		h := r.everythingHTTP(t)
		tools, owner, closeCard := attach(t, &mcp.Card{Servers: []mcp.Server{h.server("ev")}})
		echo(t, tools["ev_echo"], "before")
		h.restart()
		echo(t, tools["ev_echo"], "after")
		if w := owner.warnings(); len(w) != 0 {
			t.Errorf("warnings %q", w)
		}
		// Closing a session the restarted server lost is no error.
		h.restart()
		if err := closeCard(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Run("http killed during a call", func(t *testing.T) {
		h := r.everythingHTTP(t)
		tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{h.server("ev")}})
		h.drainPosts()
		errc := make(chan error, 1)
		go func() {
			_, err := tools["ev_trigger-long-running-operation"].Call(actortest.Context(t), []byte(`{"duration": 60, "steps": 1}`))
			errc <- err
		}()
		select {
		case <-h.post: // the call is in the server's hands
		case <-actortest.Context(t).Done():
			t.Fatal("the call never reached the server")
		}
		h.kill()
		err := <-errc
		if err == nil || !strings.HasPrefix(err.Error(), "MCP server ev failed during the call of trigger-long-running-operation: ") {
			t.Fatalf("the call the kill cut: %v", err)
		}
		if w := owner.warnings(); len(w) != 1 {
			t.Errorf("warnings %q, want one", w)
		}
		h.restart()
		echo(t, tools["ev_echo"], "after")
	})
}

// relay is the test binary between the card and a stdio server it runs
// (the command in the variables relayNode and relayScript): it passes the
// card's lines to the server, and when one is a tools/call it writes the
// server's process id to the FIFO named by relayFIFO, so that the test
// can kill the server while the call is in its hands. The server writes
// to the relay's stdout itself; the relay exits when the server does.
func relay() int {
	cmd := exec.Command(os.Getenv(relayNode), os.Getenv(relayScript), "stdio")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() {
		_ = cmd.Wait()
		os.Exit(0) // closes stdout: the card sees the end
	}()
	// The card's SIGTERM, when it stops the relay, is for the server.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if _, err := in.Write(append(sc.Bytes(), '\n')); err != nil {
			return 1
		}
		if strings.Contains(sc.Text(), `"method":"tools/call"`) {
			f, err := os.OpenFile(os.Getenv(relayFIFO), os.O_WRONLY, 0)
			if err != nil {
				return 1
			}
			fmt.Fprintln(f, cmd.Process.Pid)
			f.Close()
		}
	}
	in.Close()
	select {} // until the server exits
}

// The variables that configure relay.
const (
	relayNode   = "AKG_MCP_RELAY_NODE"
	relayScript = "AKG_MCP_RELAY_SCRIPT"
	relayFIFO   = "AKG_MCP_RELAY_FIFO"
)

// The everything server killed (SIGKILL) over stdio while it runs a
// call: the call is a tool error and a warning, and the next call starts
// a new server.
func TestReferenceKilledDuringStdioCall(t *testing.T) {
	t.Parallel()
	r := referenceServers(t)
	fifo := filepath.Join(t.TempDir(), "calls")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened for reading and writing, so that it never reads an end of
	// file between two writers; closing it ends a blocked read.
	calls, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { calls.Close() })
	pids := make(chan int, 4)
	go func() {
		sc := bufio.NewScanner(calls)
		for sc.Scan() {
			if pid, err := strconv.Atoi(sc.Text()); err == nil {
				pids <- pid
			}
		}
		close(pids)
	}()
	s := stdioServer(t, "ev")
	s.Env = map[string]string{serverEnv: "relay", relayNode: r.node, relayScript: r.everything, relayFIFO: fifo}
	tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{s}})
	errc := make(chan error, 1)
	go func() {
		_, err := tools["ev_trigger-long-running-operation"].Call(actortest.Context(t), []byte(`{"duration": 60, "steps": 1}`))
		errc <- err
	}()
	var pid int
	select {
	case pid = <-pids:
	case <-actortest.Context(t).Done():
		t.Fatal("the call never reached the server")
	}
	kill9(t, pid)
	err = <-errc
	if err == nil || !strings.HasPrefix(err.Error(), "MCP server ev failed during the call of trigger-long-running-operation: ") {
		t.Fatalf("the call the kill cut: %v", err)
	}
	if w := owner.warnings(); len(w) != 1 {
		t.Errorf("warnings %q, want one", w)
	}
	out, err := call(t, tools["ev_echo"], `{"message": "after"}`)
	if err != nil || out != "Echo: after" {
		t.Fatalf("echo after the kill: %q %v", out, err)
	}
	if next := <-pids; next == pid {
		t.Errorf("the killed server %d answered", pid)
	}
}
