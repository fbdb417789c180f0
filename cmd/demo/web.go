package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/studio"
	"github.com/akgentic/akgentic-go/studio/fleet"
)

// webOptions are the -web settings.
type webOptions struct {
	addr  string           // -web ADDR
	ready func(url string) // tests: called with the page's URL once it is served
}

// webAddr resolves -web's ADDR: a port alone (":8080" or "8080") listens
// on loopback; public reports whether the host is not loopback (then the
// page needs the token).
func webAddr(addr string) (listen, host string, public bool, err error) {
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", false, fmt.Errorf("-web %q: want [HOST]:PORT, e.g. :8080: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", "", false, fmt.Errorf("-web %q: the port %q is not a number from 0 to 65535", addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	public = !(strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback())
	return net.JoinHostPort(host, port), host, public, nil
}

// listenWeb opens -web's listener, before anything is printed: a port
// in use is refused up front.
func (d *demo) listenWeb() error {
	listen, _, _, err := webAddr(d.opt.web.addr)
	if err != nil {
		return err
	}
	if d.ln, err = net.Listen("tcp", listen); err != nil {
		return fmt.Errorf("-web %s: %w", d.opt.web.addr, err)
	}
	return nil
}

// announce prints the page's URL (its token in it when the host is
// public) with format, and tells a test.
func (d *demo) announce(host string, public bool, token, format string) {
	page := url.URL{Scheme: "http", Host: d.ln.Addr().String(), Path: "/"}
	if public {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			if name, err := os.Hostname(); err == nil {
				host = name
			}
		}
		_, port, _ := net.SplitHostPort(d.ln.Addr().String())
		page.Host = net.JoinHostPort(host, port)
		page.RawQuery = url.Values{"token": {token}}.Encode()
	}
	fmt.Fprintf(d.opt.stdout, format, page.String())
	if d.opt.web.ready != nil {
		d.opt.web.ready(page.String())
	}
}

// serveFleet serves the cluster's teams in the browser (package
// studio/fleet) on -web's listener: the list of teams, and each team's
// page following its records in the stream. end waits until run ends
// (Ctrl-C; nil: at once), then ends the console and returns its error.
func (d *demo) serveFleet(c *cluster.Client) (end func(run context.Context) error, err error) {
	_, host, public, err := webAddr(d.opt.web.addr)
	if err != nil {
		return nil, err
	}
	opt := studio.Options{Title: "akgentic demo on the cluster", Logger: d.opt.logger}
	if public {
		opt.Token = rand.Text()
	}
	ctx, cancel := context.WithCancel(context.Background())
	console, err := fleet.New(ctx, c, opt)
	if err != nil {
		cancel()
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- console.Serve(ctx, d.ln) }()
	d.announce(host, public, opt.Token, "fleet: watch the cluster's teams at %s\n")
	return func(run context.Context) error {
		if run != nil {
			fmt.Fprintln(d.opt.stdout, "(the run is over; its pages stay until Ctrl-C)")
			<-run.Done()
		}
		cancel()
		return <-served
	}, nil
}

// serveWeb serves the team in the browser (package studio) while the demo
// runs: with -i the person's lines go on in the terminal too; otherwise
// the task is sent and the page answers the agents' questions, until
// Ctrl-C.
func (d *demo) serveWeb(ctx context.Context) error {
	_, host, public, err := webAddr(d.opt.web.addr)
	if err != nil {
		return err
	}
	ln := d.ln
	if d.mode == modeScripted && d.srv != nil { // after the recorded task, anything goes
		for _, who := range []string{"", "@Manager", developer, reviewer} {
			d.srv.Model(who).Otherwise(llmtest.Final(offlineReply))
		}
		if d.opt.script != nil {
			d.opt.script(d.srv)
		}
	}
	// The studio outlives ctx (Ctrl-C): the team stops first, and its
	// pages are told so before the studio ends.
	run := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	opt := studio.Options{Person: d.human, Title: "akgentic demo", Logger: d.opt.logger}
	if d.opt.view {
		opt.Person, opt.Title = nil, "akgentic demo: "+d.opt.restoreFile // read-only
	}
	if public {
		opt.Token = rand.Text()
	}
	st, err := studio.New(ctx, d.team, opt)
	if err != nil {
		ln.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- st.Serve(ctx, ln) }()

	d.announce(host, public, opt.Token, "studio: watch the team at %s (Ctrl-C stops)\n")

	switch {
	case d.opt.interactive:
		err = d.interact(run)
	case d.opt.restoreFile != "":
		<-run.Done()
		err = run.Err()
	default:
		fmt.Fprintln(d.opt.stdout, "(the agents' questions to @Human are answered in the page)")
		if err = agent.Say(run, d.human, d.manager, agent.NewRequest(task)); err == nil {
			<-run.Done()
			err = run.Err()
		}
	}
	stopCtx, stopped := context.WithTimeout(ctx, 30*time.Second)
	if serr := d.team.Stop(stopCtx); serr != nil && err == nil {
		err = serr
	}
	stopped()
	cancel()
	if serr := <-served; serr != nil && err == nil {
		err = serr
	}
	return err
}
