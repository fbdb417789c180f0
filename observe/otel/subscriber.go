package akotel

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// scope is the instrumentation scope of the tracer and the meter.
const scope = "github.com/akgentic/akgentic-go/observe/otel"

// module is the module the scope belongs to.
const module = "github.com/akgentic/akgentic-go"

// scopeVersion is the scope's version: the version of this module the
// program was built with, as its build information says it ("(devel)" for
// a build inside the module itself, as in its own tests).
func scopeVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if bi.Main.Path == module {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == module {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "(unknown)"
}

// settleAfter is how long (in record time) a turn's span waits, after its
// Processed record, for the Error or Warning record that may follow it: the
// runtime emits that record right after Processed, on the same goroutine,
// but other members' records can come between the two (a loaded machine,
// a GC pause): a second of record time is far more than that gap, and a
// turn's span still ends without waiting for the team's stop.
const settleAfter = time.Second

// maxPending bounds the sent messages remembered per recipient until it
// receives them (a member that never drains its mailbox): past it, a
// message's turn starts a new trace, and that is logged once per member.
const maxPending = 4096

// Options configure a Subscriber. The zero value records to the global
// providers (otel.GetTracerProvider, otel.GetMeterProvider) without message
// texts.
type Options struct {
	// TracerProvider makes the spans; nil is the global one.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil is the global one.
	MeterProvider metric.MeterProvider
	// CaptureContent records texts: the content of a turn's message
	// (akgentic.message.content), a model call's chat history and its
	// output (gen_ai.input.messages, gen_ai.output.messages) and a tool call's
	// arguments and result (gen_ai.tool.call.arguments,
	// gen_ai.tool.call.result). Off by default: they may hold personal or
	// secret data.
	CaptureContent bool
	// Logger receives what the subscriber cannot record; nil is
	// slog.Default().
	Logger *slog.Logger
}

// Subscriber is a team subscriber (orchestrator.WithSubscribers,
// Team.Subscribe) that turns the team's records into spans and metrics, as
// the package documentation describes. One Subscriber may serve several
// teams; its hooks are safe for concurrent use.
type Subscriber struct {
	tracer  trace.Tracer
	meter   metric.Meter
	inst    instruments
	content bool
	logger  *slog.Logger

	mu    sync.Mutex
	teams map[uuid.UUID]*team

	regMu sync.Mutex          // guards reg; taken before mu, never inside it
	reg   metric.Registration // the live-members callback, while a team is known
}

var (
	_ orchestrator.RecordSubscriber    = (*Subscriber)(nil)
	_ orchestrator.RestoringSubscriber = (*Subscriber)(nil)
	_ orchestrator.StopSubscriber      = (*Subscriber)(nil)
	_ orchestrator.LossySubscriber     = (*Subscriber)(nil)
)

// New returns a Subscriber recording to the providers of opts. It fails
// only when an instrument cannot be created.
func New(opts Options) (*Subscriber, error) {
	tp, mp := opts.TracerProvider, opts.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	s := &Subscriber{
		tracer:  tp.Tracer(scope, trace.WithInstrumentationVersion(scopeVersion()), trace.WithSchemaURL(semconv.SchemaURL)),
		meter:   mp.Meter(scope, metric.WithInstrumentationVersion(scopeVersion()), metric.WithSchemaURL(semconv.SchemaURL)),
		content: opts.CaptureContent,
		logger:  logger,
		teams:   map[uuid.UUID]*team{},
	}
	if err := s.inst.init(s.meter); err != nil {
		return nil, err
	}
	return s, nil
}

// OnRecord records one record of a team; it reads the record's message
// except for a state change, which has nothing to record.
func (s *Subscriber) OnRecord(r *orchestrator.Record) {
	if r.Type() == "StateChangedMessage" {
		return
	}
	s.OnMessage(r.Message())
}

// OnMessage records one message of a team (a record, as OnRecord does, or
// a MetadataChanged, which it ignores).
func (s *Subscriber) OnMessage(m message.Message) {
	if m == nil {
		return
	}
	b := m.Envelope()
	if !b.TeamID.Valid || b.Sender == nil {
		return
	}
	s.mu.Lock()
	t, fresh := s.team(b.TeamID.UUID)
	if !t.restoring {
		s.record(t, m)
	}
	s.mu.Unlock()
	if fresh {
		s.register()
	}
}

// OnMissed is told that the team dropped records for the exporter: it is
// a lossy subscriber, so a slow exporter never slows the team. Their spans
// and metrics are missing; a warning names how many and their ids.
func (s *Subscriber) OnMissed(m orchestrator.Missed) {
	s.logger.Warn("akotel: the team dropped records for the exporter, which fell behind; their spans and metrics are missing",
		"records", m.Records, "first", m.First, "last", m.Last)
}

// SetRestoring marks the start (true) and the end (false) of a restore's
// replay for a team: replayed records are not recorded again.
func (s *Subscriber) SetRestoring(teamID uuid.UUID, restoring bool) {
	s.mu.Lock()
	t, fresh := s.team(teamID)
	t.restoring = restoring
	s.mu.Unlock()
	if fresh {
		s.register()
	}
}

// OnStop ends the team's open spans (a turn still running gets an Error
// status) and frees its bookkeeping.
func (s *Subscriber) OnStop(teamID uuid.UUID) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.mu.Lock()
	if t, ok := s.teams[teamID]; ok {
		now := t.last
		for _, mb := range t.members {
			s.endTurn(t, mb, now)
		}
		delete(s.teams, teamID)
	}
	empty := len(s.teams) == 0
	s.mu.Unlock()
	if empty && s.reg != nil {
		if err := s.reg.Unregister(); err != nil {
			s.logger.Warn("akotel: unregistering the live-members callback failed", "error", err)
		}
		s.reg = nil
	}
}

// team returns the state of a team, made on first sight (fresh).
func (s *Subscriber) team(id uuid.UUID) (*team, bool) {
	if t, ok := s.teams[id]; ok {
		return t, false
	}
	t := &team{id: id, members: map[uuid.UUID]*member{}}
	s.teams[id] = t
	return t, true
}

// register installs the live-members callback when a team is known and it
// is not installed. It runs outside mu: the SDK calls the callback, which
// takes mu, under its own lock.
func (s *Subscriber) register() {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if s.reg != nil {
		return
	}
	s.mu.Lock()
	known := len(s.teams) > 0
	s.mu.Unlock()
	if !known {
		return
	}
	reg, err := s.meter.RegisterCallback(s.observeMembers, s.inst.members)
	if err != nil {
		s.logger.Warn("akotel: registering the live-members callback failed", "error", err)
		return
	}
	s.reg = reg
}

// observeMembers reports the live members of each known team.
func (s *Subscriber) observeMembers(_ context.Context, o metric.Observer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.teams {
		if !t.restoring {
			o.ObserveInt64(s.inst.members, t.live, metric.WithAttributeSet(t.attrs()))
		}
	}
	return nil
}
