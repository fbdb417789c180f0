package studio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// maxInput is the largest request body /api/send accepts.
const maxInput = 64 << 10

// input is the body of POST /api/send.
type input struct {
	// To is the member a message goes to: its agent id or its name.
	To string `json:"to"`
	// Text is the message: free text or a /command.
	Text string `json:"text"`
	// Answer, when set, is the id of the question (a message an agent
	// sent the person) that Text answers; To is then not needed.
	Answer string `json:"answer"`
	// Approve, with Answer the id of an approval request, approves (true)
	// or denies (false) the tool call it asks about; Text, then optional,
	// is the reason (agent.Decision).
	Approve *bool `json:"approve"`
}

// inputError is a refused input: its status and what was wrong.
type inputError struct {
	status int
	msg    string
}

func (e *inputError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) error {
	return &inputError{status: status, msg: "studio: " + fmt.Sprintf(format, args...)}
}

// send handles POST /api/send: a message or an answer, as the person.
func (s *Studio) send(w http.ResponseWriter, r *http.Request) {
	err := s.sendErr(r)
	if err == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"ok":true}`+"\n")
		return
	}
	var ie *inputError
	if !errors.As(err, &ie) {
		ie = &inputError{status: http.StatusInternalServerError, msg: err.Error()}
		if errors.Is(err, actor.ErrActorDead) {
			ie.status = http.StatusGone
		}
	}
	http.Error(w, ie.msg, ie.status)
}

// speaker is how a page's input reaches the team: as its person.
type speaker interface {
	// person is the member the page speaks as; nil while none is known.
	person() *message.Address
	say(ctx context.Context, to *message.Address, text string) error
	answer(ctx context.Context, q message.Message, text string) error
	decide(ctx context.Context, q message.Message, approve bool, reason string) error
}

// local speaks as a person of a team in this process.
type local struct{ p *message.Address }

func (l local) person() *message.Address { return l.p }

func (l local) say(ctx context.Context, to *message.Address, text string) error {
	return agent.Say(ctx, l.p, to, &agent.AgentMessage{Type: agent.Request, Content: text})
}

func (l local) answer(ctx context.Context, q message.Message, text string) error {
	return orchestrator.ProcessHumanInput(ctx, l.p, text, q)
}

func (l local) decide(ctx context.Context, q message.Message, approve bool, reason string) error {
	return orchestrator.ProcessHumanInput(ctx, l.p, agent.Decision(approve, reason), q)
}

// voice is the page's speaker and its person, or an error saying why
// the page cannot speak.
func (s *Studio) voice() (speaker, *message.Address, error) {
	if s.in == nil {
		return nil, nil, refuse(http.StatusForbidden, "this page is read-only: the studio speaks for no person (studio.Options.Person is not set)")
	}
	p := s.in.person()
	if p == nil {
		return nil, nil, refuse(http.StatusConflict, "the team has no person yet: its records name no member the page can speak as")
	}
	return s.in, p, nil
}

func (s *Studio) sendErr(r *http.Request) error {
	in0, person, err := s.voice()
	if err != nil {
		return err
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return refuse(http.StatusForbidden, "a request from another site (Origin %q) cannot speak for the person", o)
		}
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return refuse(http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type: application/json), not %q", r.Header.Get("Content-Type"))
	}
	var in input
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxInput))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return refuse(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", maxInput)
		}
		return refuse(http.StatusBadRequest, "the body is not a message: %v (want {\"to\": member, \"text\": …} or {\"answer\": question id, \"text\": …})", err)
	}
	if dec.More() {
		return refuse(http.StatusBadRequest, "the body has more than one JSON value: send one message per request")
	}
	if in.Approve != nil {
		return s.decide(r.Context(), in0, person, in)
	}
	if strings.TrimSpace(in.Text) == "" {
		return refuse(http.StatusBadRequest, "text is empty: there is nothing to send")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if in.Answer != "" {
		q, err := s.question(ctx, person, in.Answer)
		if err != nil {
			return err
		}
		return in0.answer(ctx, q, in.Text)
	}
	to, err := s.recipient(ctx, person, in.To)
	if err != nil {
		return err
	}
	return in0.say(ctx, to, in.Text)
}

// decide sends the person's decision on an approval request.
func (s *Studio) decide(ctx context.Context, sp speaker, person *message.Address, in input) error {
	if in.Answer == "" {
		return refuse(http.StatusBadRequest, "approve needs answer: the id of the approval request decided")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q, err := s.question(ctx, person, in.Answer)
	if err != nil {
		return err
	}
	if am, ok := q.(*agent.AgentMessage); !ok || am.Approval == nil {
		return refuse(http.StatusBadRequest, "answer is %s, a message that asks no approval: send text to answer it", in.Answer)
	}
	return sp.decide(ctx, q, *in.Approve, in.Text)
}

// recipient finds the member a message is for, by agent id or name.
func (s *Studio) recipient(ctx context.Context, person *message.Address, to string) (*message.Address, error) {
	to = strings.TrimSpace(to)
	if to == "" {
		return nil, refuse(http.StatusBadRequest, "to is empty: choose the member the message is for")
	}
	ms, err := s.team.Members(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range ms {
		if a.AgentID().String() != to && a.Name() != to {
			continue
		}
		switch {
		case a.AgentID() == person.AgentID():
			return nil, refuse(http.StatusBadRequest, "to is %s, the person this page speaks for: choose another member", a.Name())
		case !shown(a):
			return nil, refuse(http.StatusBadRequest, "to is %s, a tool actor: messages go to agents", a.Name())
		}
		return a, nil
	}
	return nil, refuse(http.StatusNotFound, "to is %q: no member of the team has that id or name", to)
}

// question finds the message an agent sent the person with the id
// given: the one an answer replies to.
func (s *Studio) question(ctx context.Context, person *message.Address, id string) (message.Message, error) {
	qid, err := uuid.Parse(id)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "answer is %q, not a message id (a UUID)", id)
	}
	sent, err := s.team.Messages(ctx, orchestrator.Filter{Type: "SentMessage"})
	if err != nil && !errors.Is(err, orchestrator.ErrOutsideWindow) {
		return nil, err
	}
	for _, sm := range orchestrator.Select[*message.SentMessage](sent) {
		if sm.Message == nil || sm.Message.Envelope().ID != qid {
			continue
		}
		if sm.Recipient == nil || sm.Recipient.AgentID() != person.AgentID() {
			return nil, refuse(http.StatusBadRequest, "answer is %s, a message to %s, not to the person", id, nameOf(sm.Recipient))
		}
		return sm.Message, nil
	}
	return nil, refuse(http.StatusNotFound, "answer is %s: the team's history has no message to the person with that id", id)
}
