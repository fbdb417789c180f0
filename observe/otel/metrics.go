package akotel

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
)

// instruments are the subscriber's metrics (the package doc lists them).
type instruments struct {
	messages      metric.Int64Counter
	turns         metric.Int64Counter
	errors        metric.Int64Counter
	warnings      metric.Int64Counter
	turnDuration  metric.Float64Histogram
	tokens        genaiconv.ClientTokenUsage
	modelDuration genaiconv.ClientOperationDuration
	cost          metric.Float64Counter
	members       metric.Int64ObservableGauge
}

// The GenAI semantic conventions' advised bucket boundaries.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

func (in *instruments) init(m metric.Meter) error {
	var errs [9]error
	in.messages, errs[0] = m.Int64Counter("akgentic.messages",
		metric.WithDescription("Messages sent in the team, by sender kind and role and message type."), metric.WithUnit("{message}"))
	in.turns, errs[1] = m.Int64Counter("akgentic.turns",
		metric.WithDescription("Turns (a member handling a message), by actor kind and role."), metric.WithUnit("{turn}"))
	in.errors, errs[2] = m.Int64Counter("akgentic.errors",
		metric.WithDescription("Error records, by actor kind and role."), metric.WithUnit("{error}"))
	in.warnings, errs[3] = m.Int64Counter("akgentic.warnings",
		metric.WithDescription("Warning records, by actor kind and role."), metric.WithUnit("{warning}"))
	in.turnDuration, errs[4] = m.Float64Histogram("akgentic.turn.duration",
		metric.WithDescription("Duration of a turn, from Received to Processed."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	// The conventions' instruments, with their names, units and
	// descriptions, and their advised buckets.
	in.tokens, errs[5] = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	in.modelDuration, errs[6] = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	in.cost, errs[7] = m.Float64Counter("akgentic.llm.cost",
		metric.WithDescription("Cost of model calls from the price table, by requested model and role."), metric.WithUnit("USD"))
	in.members, errs[8] = m.Int64ObservableGauge("akgentic.team.members",
		metric.WithDescription("Live members of a team."), metric.WithUnit("{member}"))
	return errors.Join(errs[:]...)
}
