package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// command is the transport to a stdio server: cmd started with pipes, its
// stdout passed to tap line by line. Closing it closes the child's stdin,
// sends SIGTERM after terminateWait and SIGKILL as long after, and reaps
// the child; how the child exited is no error (a Node server that outlives
// its closed stdin ends by the SIGTERM: that is how it is stopped).
type command struct {
	cmd *exec.Cmd
	tap func([]byte)
}

func (c *command) Connect(ctx context.Context) (sdk.Connection, error) {
	// stdout is a pipe of ours, not os/exec's: the child is reaped as
	// soon as it exits (so that a dead server is seen at once), and
	// reaping closes os/exec's pipes, which would lose what the child
	// wrote last.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.cmd.Stdout = w
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		stdout.Close()
		w.Close()
		return nil, err
	}
	err = c.cmd.Start()
	w.Close() // the child's copy keeps it open
	if err != nil {
		stdout.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = c.cmd.Wait() // its status is of no use: see command
		close(exited)
	}()
	// The SDK closes the reader, then the writer, which stops the child
	// and then closes stdout (at EOF once the child is gone).
	t := &sdk.IOTransport{
		Reader: io.NopCloser(&tapReader{r: stdout, tap: c.tap}),
		Writer: &stopper{stdin: stdin, stdout: stdout, proc: c.cmd, exited: exited},
	}
	return t.Connect(ctx)
}

// stopper is a child's stdin; closing it stops the child.
type stopper struct {
	stdin  io.WriteCloser
	stdout *os.File
	proc   *exec.Cmd
	exited chan struct{}
	once   sync.Once
	err    error
}

func (s *stopper) Write(p []byte) (int, error) { return s.stdin.Write(p) }

func (s *stopper) Close() error {
	s.once.Do(func() {
		s.err = s.stop()
		s.stdout.Close()
	})
	return s.err
}

func (s *stopper) stop() error {
	_ = s.stdin.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t := time.NewTimer(terminateWait)
		select {
		case <-s.exited:
			t.Stop()
			return nil
		case <-t.C:
		}
		_ = s.proc.Process.Signal(sig)
	}
	t := time.NewTimer(terminateWait)
	defer t.Stop()
	select {
	case <-s.exited:
		return nil
	case <-t.C:
		return fmt.Errorf("process %d did not exit %s after SIGKILL", s.proc.Process.Pid, terminateWait)
	}
}

// maxTapLine bounds the line a tapReader keeps for its tap; a longer line
// is passed over.
const maxTapLine = 4 << 20

// tapReader passes what it reads on, and each line of it to tap (the last
// one, without a newline, at EOF).
type tapReader struct {
	r    io.ReadCloser
	tap  func([]byte)
	line []byte
	over bool // the current line outgrew maxTapLine
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.keep(b)
			break
		}
		t.keep(b[:i])
		t.flush()
		b = b[i+1:]
	}
	if err != nil {
		t.flush()
	}
	return n, err
}

func (t *tapReader) keep(b []byte) {
	if t.over || len(t.line)+len(b) > maxTapLine {
		t.over, t.line = true, t.line[:0]
		return
	}
	t.line = append(t.line, b...)
}

func (t *tapReader) flush() {
	if !t.over && len(t.line) > 0 && t.tap != nil {
		t.tap(t.line)
	}
	t.line, t.over = t.line[:0], false
}

func (t *tapReader) Close() error { return t.r.Close() }

// taskTools records the tools a server lists as callable only as a task
// (execution.taskSupport "required"), from the raw answers of the
// session: the SDK's Tool has no field for it, and the card does not
// speak tasks, so such a tool always fails and is not offered.
type taskTools struct {
	mu    sync.Mutex
	names map[string]bool
}

// line looks at one line the server sent: a JSON-RPC message, or an SSE
// "data:" line holding one.
func (tt *taskTools) line(b []byte) {
	if !bytes.Contains(b, []byte(`"taskSupport"`)) {
		return // the common case, at the cost of a scan
	}
	b = bytes.TrimPrefix(b, []byte("data:"))
	var m struct {
		Result struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, t := range m.Result.Tools {
		if t.Execution.TaskSupport == "required" {
			if tt.names == nil {
				tt.names = map[string]bool{}
			}
			tt.names[t.Name] = true
		}
	}
}

func (tt *taskTools) required(name string) bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.names[name]
}

// unsent reports whether err says the request ran nothing on the server:
// an HTTP server answered that it does not know the session (404, or the
// reference server's 400), writing to a dead child failed (EPIPE; or its
// stdin was already closed by reaping it), or the SDK had seen the
// session end before the call (the jsonrpc2 layer's "client is closing",
// which the SDK passes on only as text: a call cut in flight says
// "server is closing" instead).
func unsent(err error) bool {
	var ls *lostSession
	return errors.As(err, &ls) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) ||
		(errors.Is(err, sdk.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing"))
}
