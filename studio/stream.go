package studio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// heartbeat is how often an idle stream writes a comment, so that proxies
// and browsers keep it open.
const heartbeat = 20 * time.Second

// stream writes one page's events; the first write error ends it. Each
// write has writeTimeout to complete (where the server lets a handler
// move its deadline, as Serve's does): a page that stops reading loses
// its stream instead of holding it.
type stream struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	writeTimeout time.Duration
	err          error
	ended        bool // the team's stop was written: nothing more comes
}

func (st *stream) deadline() {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.writeTimeout)) // unsupported by the server: its own timeouts apply
}

func (st *stream) write(f frame) {
	if st.err == nil && !st.ended {
		st.deadline()
		_, st.err = st.w.Write(f.data)
		st.ended = f.last
	}
}

func (st *stream) flush() {
	if st.err == nil {
		st.deadline()
		st.err = st.rc.Flush()
	}
}

// events serves the event stream: a hello, the history the page lacks
// (all of it for a new page; what follows its last event for a
// reconnecting one), a "live" marker, then the team's records as they
// happen.
func (s *Studio) events(w http.ResponseWriter, r *http.Request) {
	if _, ok := w.(http.Flusher); !ok {
		http.Error(w, "studio: this server cannot stream (its ResponseWriter is not an http.Flusher)", http.StatusInternalServerError)
		return
	}
	after, err := resumePoint(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	release, why := s.streams.acquire(clientOf(r), s.opt.MaxStreams, s.opt.MaxStreamsPerClient)
	if why != "" {
		if s.streams.refused.Add(1) == 1 {
			s.opt.Logger.Warn("studio: an event stream was refused (the first refusal; later ones are not logged)", "team", s.team.ID(), "why", why)
		}
		w.Header().Set("Retry-After", "5")
		http.Error(w, "studio: "+why+"; try again later", http.StatusServiceUnavailable)
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // the request is read: the read timeout must not end the stream
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel) // the studio's end ends the stream
	defer stop()

	c, stopped := s.hub.join() // before the history is read: nothing falls between
	defer s.hub.leave(c)

	// One read of the whole log, the state changes in their places: read
	// apart, a state change made between the two reads is in neither, and
	// placing one among the records by time is wrong within a clock tick.
	hist, herr := s.team.Messages(ctx, orchestrator.Filter{States: true})
	if herr != nil && !errors.Is(herr, orchestrator.ErrOutsideWindow) {
		http.Error(w, fmt.Sprintf("studio: reading the team's history: %v", herr), http.StatusServiceUnavailable)
		return
	}

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	st := &stream{w: w, rc: rc, writeTimeout: s.opt.WriteTimeout}
	st.write(frame{data: []byte("retry: 2000\n\n")})

	start, reset := 0, true
	if after != uuid.Nil {
		for i, m := range hist {
			if m.Envelope().ID == after {
				start, reset = i+1, false
				break
			}
		}
	}
	person := ""
	if s.in != nil {
		if p := s.in.person(); p != nil {
			person = p.AgentID().String()
		}
	}
	st.write(control(event{K: "hello", Reset: reset, Team: s.team.ID().String(), Title: s.opt.Title, Who: person}))
	if reset {
		if after != uuid.Nil {
			st.write(control(event{K: "gap", Text: fmt.Sprintf("This page's last event (%s) is no longer in the team's history; the page was reloaded from the start.", after)}))
		}
		if herr != nil { // the window without an archive: say what is missing
			st.write(control(event{K: "gap", Text: herr.Error()}))
		}
		st.write(control(s.roster(ctx)))
		st.write(control(s.cards(ctx)))
	}
	recs, states := splitStates(hist)
	st.write(s.lastBoard(ctx, states))
	writeHistory(st, hist, start)
	skip, skipState := seen(recs, s.opt.Buffer), seen(states, s.opt.Buffer)
	st.write(control(event{K: "live", Live: !stopped}))
	if stopped {
		st.write(stoppedFrame()) // the history is all there is: the stream ends
	}
	st.flush()
	s.follow(ctx, st, c, skip, skipState)
}

// writeHistory writes the records of hist from start, the state changes
// among them.
func writeHistory(st *stream, hist []message.Message, start int) {
	for _, m := range hist[start:] {
		if ev, ok := render(m); ok {
			st.write(encode(ev))
		}
	}
}

// splitStates returns the records of hist and its state changes apart.
func splitStates(hist []message.Message) (recs, states []message.Message) {
	for _, m := range hist {
		if _, ok := m.(*message.StateChangedMessage); ok {
			states = append(states, m)
		} else {
			recs = append(recs, m)
		}
	}
	return recs, states
}

// follow writes the records queued on c until the team's stop is
// written, the page leaves, the studio ends or c falls behind. When the
// studio ends, what was queued is written first (a team stopped just
// before, as a program stops it before its studio, is told to the page).
// A record already sent with the history (it is in skip or skipState) is
// not sent again.
func (s *Studio) follow(ctx context.Context, st *stream, c *client, skip, skipState map[uuid.UUID]bool) {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	drawn := map[uuid.UUID]shownText{} // the answers' text last written, by agent
	for st.err == nil && !st.ended {
		select {
		case <-ctx.Done():
			for len(c.ch) > 0 && st.err == nil && !st.ended {
				s.forward(st, <-c.ch, skip, skipState)
			}
			st.flush()
			return
		case <-c.behind:
			s.opt.Logger.Warn("studio: a page fell behind the team; it is told to catch up", "team", s.team.ID(), "buffer", s.opt.Buffer)
			// Everything queued before the cut is still worth sending.
			for len(c.ch) > 0 {
				s.forward(st, <-c.ch, skip, skipState)
			}
			st.write(control(event{K: "reload", Text: fmt.Sprintf("This page fell more than %d events behind the team; it is catching up from its last event.", s.opt.Buffer)}))
			st.flush()
			return
		case f := <-c.ch:
			s.forward(st, f, skip, skipState)
			for len(c.ch) > 0 && st.err == nil { // a burst: one flush
				s.forward(st, <-c.ch, skip, skipState)
			}
			st.flush()
		case <-c.wake:
			// The records queued before the answers were taken go first:
			// one that ended an answer is never followed by its text.
			queued, ws := s.hub.takeWriting(c)
			for range queued {
				s.forward(st, <-c.ch, skip, skipState)
			}
			for _, w := range ws {
				text := llm.StreamedText(w.raw)
				if last, ok := drawn[w.who]; ok && last.gen == w.gen && last.text == text {
					continue // the answer grew, its messages' text did not
				}
				drawn[w.who] = shownText{w.gen, text}
				st.write(writingFrame(w, text))
			}
			st.flush()
		case <-tick.C:
			st.write(frame{data: []byte(": ping\n\n")})
			st.flush()
		}
	}
}

// shownText is the text of an answer a stream last wrote.
type shownText struct {
	gen  uint64
	text string
}

// forward writes f unless the history already had it. Once a record is
// not in the history, none after it is: the set is dropped.
func (s *Studio) forward(st *stream, f frame, skip, skipState map[uuid.UUID]bool) {
	set := skip
	if f.state {
		set = skipState
	}
	if f.id != uuid.Nil && len(set) > 0 {
		if set[f.id] {
			return
		}
		clear(set)
	}
	st.write(f)
}

// seen returns the ids of the last n messages of hist the page is shown:
// the only ones a stream's queue (n events at most) can also hold.
func seen(hist []message.Message, n int) map[uuid.UUID]bool {
	out := make(map[uuid.UUID]bool, min(n, len(hist)))
	for i := len(hist) - 1; i >= 0 && len(out) < n; i-- {
		if _, ok := render(hist[i]); ok {
			out[hist[i].Envelope().ID] = true
		}
	}
	return out
}

// lastBoard is the latest task board among the state changes, else in
// the team's states (a board whose changes all left the window), else a
// board event saying there is none (the page hides its task board). It
// is a snapshot of now: a page showing an earlier moment skips it.
func (s *Studio) lastBoard(ctx context.Context, states []message.Message) frame {
	for i := len(states) - 1; i >= 0; i-- {
		if sc, ok := states[i].(*message.StateChangedMessage); ok {
			if tasks, ok := board(sc); ok {
				return control(event{K: "board", Tasks: tasks, Snap: true})
			}
		}
	}
	all, _ := s.team.States(ctx)
	for _, v := range all {
		if b, ok := v.(*planning.Board); ok && b != nil {
			tasks, _ := planning.TasksOf(b)
			return control(event{K: "board", Tasks: tasks, Snap: true})
		}
	}
	return control(event{K: "board", Text: "none", Snap: true})
}

// roster is the members event: who is in the team now (members whose
// joining left the history are still listed). It is a snapshot of now: a
// page showing an earlier moment skips it.
func (s *Studio) roster(ctx context.Context) event {
	ev := event{K: "members", Snap: true}
	ms, _ := s.team.Members(ctx)
	for _, a := range ms {
		if shown(a) {
			ev.List = append(ev.List, member{Who: idOf(a), Name: label(a.Name()), Role: label(a.Role()), Person: a.IsUserProxy()})
		}
	}
	return ev
}

// resumePoint is the id of the page's last event: the Last-Event-ID
// header a browser sends when it reconnects on its own (the newest), else
// ?after= (a page that opened a new stream to catch up).
func resumePoint(r *http.Request) (uuid.UUID, error) {
	v, src := r.Header.Get("Last-Event-ID"), "the Last-Event-ID header"
	if v == "" {
		v, src = r.URL.Query().Get("after"), "?after="
	}
	if v == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, fmt.Errorf("studio: %s is %q, not an event id (a UUID)", src, v)
	}
	return id, nil
}
