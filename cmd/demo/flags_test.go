package main

import (
	"bytes"
	"strings"
	"testing"
)

// -h lists the flags and exits 0 (mainErr returns nil).
func TestHelpExitsZero(t *testing.T) {
	var out bytes.Buffer
	if err := mainErr([]string{"-h"}, strings.NewReader(""), &out, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"-restore FILE", "-web ADDR", "-timeout", "-workspace DIR"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h output lacks %q:\n%s", want, out.String())
		}
	}
}

// Flags that cannot work together are refused before anything runs, with
// one line naming them; nothing else is printed.
func TestIncompatibleFlagsRefusedUpFront(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-restore", "t.log", "-cluster"}, "-restore and -cluster cannot be combined"},
		{[]string{"-i", "-cluster"}, "-i and -cluster cannot be combined"},
		{[]string{"-log", "t.log", "-cluster"}, "-log and -cluster cannot be combined"},
		{[]string{"-log", "a.log", "-restore", "b.log"}, "-log and -restore cannot be combined"},
		{[]string{"-web", ":99999"}, `-web ":99999": the port "99999" is not a number from 0 to 65535`},
		{[]string{"-web", "a:b:c"}, `-web "a:b:c"`},
		{[]string{"-timeout", "-1s"}, "-timeout -1s"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var out bytes.Buffer
		err := mainErr(c.args, strings.NewReader(""), &out, &out, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v; want one containing %q", c.args, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: the refusal is more than one line: %q", c.args, err)
		}
		if out.Len() > 0 {
			t.Errorf("%v: printed before refusing:\n%s", c.args, out.String())
		}
	}
}

// A -web port already in use is refused before the team starts: nothing
// is printed, not even an empty usage table.
func TestWebPortInUseRefusedBeforeOutput(t *testing.T) {
	var out bytes.Buffer
	opt := testOptions(&out)
	opt.web.addr = "127.0.0.1:0"
	first := &demo{opt: opt}
	if err := first.listenWeb(); err != nil {
		t.Fatal(err)
	}
	defer first.ln.Close()
	opt.web.addr = first.ln.Addr().String()
	err := run(t.Context(), opt)
	if err == nil || !strings.Contains(err.Error(), "-web "+opt.web.addr) {
		t.Fatalf("a port in use: %v", err)
	}
	if out.Len() > 0 {
		t.Errorf("printed before refusing:\n%s", out.String())
	}
}

// /help in -i lists every command a person can type: the demo's own
// (/usage, /cancel, /quit, /help) and then the manager's.
func TestHelpListsEveryCommand(t *testing.T) {
	out := runDemo(t, "/help\n/quit\n", "-i")
	outputHas(t, out, "/usage ", "/cancel ", "/quit ", "/help ", "@Manager's commands follow.", "/hire_member <role>", "/team_members")
	if strings.Index(out, "/cancel ") > strings.Index(out, "/hire_member <role>") {
		t.Errorf("the demo's commands come after the manager's:\n%s", out)
	}
}

// Each banner says what happens in that mode; none of them claims a
// recording is made unless the transcript is being recorded.
func TestBannersSayWhatHappens(t *testing.T) {
	for _, c := range []struct {
		d    demo
		want string
	}{
		{demo{mode: modeReplay}, "a recorded conversation"},
		{demo{mode: modeScripted, opt: options{web: webOptions{addr: ":8080"}}}, "played in the page"},
		{demo{mode: modeScripted, opt: options{record: &bytes.Buffer{}}}, "recording the offline transcript"},
		{demo{mode: modeOffline, opt: options{interactive: true}}, "a fixed reply"},
		{demo{mode: modeOffline, opt: options{restoreFile: "t.log"}}, "no recording beyond the log"},
		{demo{mode: modeReal, opt: options{restoreFile: "t.log"}}, "goes on with the work the log left unfinished"},
		{demo{mode: modeReal}, "on a real model"},
	} {
		got := c.d.describe()
		if !strings.Contains(got, c.want) {
			t.Errorf("mode %d %+v: banner %q lacks %q", c.d.mode, c.d.opt, got, c.want)
		}
		if c.d.opt.record == nil && strings.Contains(got, "recording") && !strings.Contains(got, "no recording") {
			t.Errorf("mode %d: banner %q speaks of a recording that is not made", c.d.mode, got)
		}
	}
}

// -view needs -web, and runs nothing: it is refused with the flags that
// would.
func TestViewFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-view", "t.log"}, "-view needs -web ADDR"},
		{[]string{"-view", "t.log", "-web", ":0", "-i"}, "-view cannot be combined with -i, -log or -cluster"},
		{[]string{"-view", "t.log", "-web", ":0", "-cluster"}, "-view cannot be combined with -i, -log or -cluster"},
		{[]string{"-view", "t.log", "-restore", "t.log"}, "-view and -restore cannot be combined"},
	} {
		var out bytes.Buffer
		if err := mainErr(c.args, strings.NewReader(""), &out, &out, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), c.want) || out.Len() > 0 {
			t.Errorf("%v: %v (printed %q); want %q", c.args, err, out.String(), c.want)
		}
	}
}
