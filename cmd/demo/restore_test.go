package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// isolateTemp points the temporary folder at an empty one of the test's,
// and fails the test if the demo left anything in it.
func isolateTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	t.Cleanup(func() {
		left, err := os.ReadDir(dir)
		if err != nil {
			t.Error(err)
		}
		for _, e := range left {
			t.Errorf("the demo left %s in the temporary folder", e.Name())
		}
	})
	return dir
}

// A run leaves nothing in the temporary folder: neither its workspace
// nor its offline search results.
func TestNoTempFileLeftBehind(t *testing.T) {
	isolateTemp(t)
	out := runDemo(t, "")
	outputHas(t, out, "@Developer100 ⚙ web_search", "(temporary, removed at the end; -workspace DIR keeps the files)")
}

// -log then -restore: the restored agents work in the folder their log
// names, and the demo says so; the folder, gone since the first run,
// is recreated for the restore and removed at the end, as is the search
// results' file.
func TestRestoreUsesTheLogsWorkspace(t *testing.T) {
	isolateTemp(t)
	logPath := filepath.Join(t.TempDir(), "team.log")
	first := runDemo(t, "", "-log", logPath)
	root := between(first, "workspace ", " (")
	if root == "" {
		t.Fatalf("the first run names no workspace:\n%s", first)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the first run's temporary workspace %s is still there: %v", root, err)
	}
	again := runDemo(t, "/team_members\n/quit\n", "-restore", logPath, "-i")
	outputHas(t, again, "workspace "+root+" (the one the log names; it no longer existed, so it starts empty and is removed at the end)")
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the restore left the workspace it recreated, %s: %v", root, err)
	}
}

// A workspace given with -workspace is kept, and a restore of its log
// finds the files the first run wrote there; another -workspace is
// refused, naming the log's.
func TestRestoreKeepsAWorkspaceGiven(t *testing.T) {
	isolateTemp(t)
	dir := filepath.Join(t.TempDir(), "ws")
	logPath := filepath.Join(t.TempDir(), "team.log")
	runDemo(t, "", "-log", logPath, "-workspace", dir)
	written, _ := filepath.Glob(filepath.Join(dir, "*", "greet.go"))
	if len(written) != 1 {
		t.Fatalf("greet.go under %s: %v", dir, written)
	}
	again := runDemo(t, "/quit\n", "-restore", logPath, "-i")
	outputHas(t, again, "workspace "+dir+" (the one the log names, kept)")
	if _, err := os.Stat(written[0]); err != nil {
		t.Errorf("the restore removed the kept workspace's files: %v", err)
	}
	var out bytes.Buffer
	err := mainErr([]string{"-restore", logPath, "-workspace", t.TempDir()}, strings.NewReader(""), &out, &out, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "the log's agents work in "+dir) {
		t.Errorf("another -workspace: %v", err)
	}
}

// midTaskLog writes the log of a team stopped (Ctrl-C) while the manager
// was working on the person's request, and returns its path.
func midTaskLog(t *testing.T) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "team.log")
	var out bytes.Buffer
	opt := testOptions(&out)
	offline := modeOffline
	opt.forceMode, opt.logFile = &offline, logPath
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt.script = func(srv *llmtest.Server) {
		cut := llmtest.Hang() // until the team's stop ends the request
		cut.Check = func(*llmtest.Request) error {
			cancel() // Ctrl-C while the model works
			return nil
		}
		srv.Model("").Enqueue(cut)
	}
	if err := run(ctx, opt); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return logPath
}

// A team restored offline from a log that ends mid-task says what was
// left unfinished and, plainly, that the recording has nothing more.
func TestRestoredMidTaskOfflineSaysSo(t *testing.T) {
	isolateTemp(t)
	out := runDemo(t, "", "-restore", midTaskLog(t))
	outputHas(t, out,
		"the team restored from ",
		"The log left this work unfinished:\n  - @Human's request to @Manager was not finished: \"We need a tiny Go command",
		"Offline, the recording has nothing more: the restored team cannot go on with it. Set OPENAI_API_KEY")
}

// On a real model the restored team goes on with the work its log left
// unfinished: the cut request is sent again and the manager reports.
func TestRestoredMidTaskGoesOnOnARealModel(t *testing.T) {
	isolateTemp(t)
	logPath := midTaskLog(t)
	srv := llmtest.NewServer(llmtest.WithRouter(func(*llmtest.Request) string { return "" }))
	defer srv.Close()
	srv.Model("").Otherwise(llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"done after the restore"}]}`))
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL()}
	var out bytes.Buffer
	if err := mainErr([]string{"-restore", logPath}, strings.NewReader(""), &out, &out, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	outputHas(t, out.String(),
		"on a real model: it goes on with the work the log left unfinished",
		"On the real model the team goes on with it",
		"@Manager → @Human · response\n  done after the restore")
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the real model")
	}
	hist := reqs[len(reqs)-1].History()
	if len(hist) == 0 || !strings.Contains(hist[len(hist)-1].Text(), "We need a tiny Go command") {
		t.Errorf("the cut request was not sent to the model again: %+v", hist)
	}
}

// A restore of a log whose work was all done says so and what to do.
func TestRestoredFinishedTeamSaysNothingIsLeft(t *testing.T) {
	isolateTemp(t)
	logPath := filepath.Join(t.TempDir(), "team.log")
	runDemo(t, "", "-log", logPath)
	outputHas(t, runDemo(t, "", "-restore", logPath),
		"The log left no work unfinished.\nNothing more to do: add -i to talk to the team")
}

// between returns the text of s between the first before and the next
// after ("" when either is missing).
func between(s, before, after string) string {
	_, rest, ok := strings.Cut(s, before)
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(rest, after)
	if !ok {
		return ""
	}
	return v
}
