package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/akgentic/akgentic-go/internal/clock"
)

// setupAttempt bounds one try of a setup call (a stream or bucket made or
// looked up): on a fresh cluster a request sent before JetStream elected
// its leaders may go unanswered, and is sent again.
const setupAttempt = 5 * time.Second

// untilReady runs f, a setup call, until it succeeds, fails for a reason
// other than JetStream not answering yet (notReady), or ctx ends. Three
// workers starting at once on a fresh cluster see "no responders", time-outs
// and "temporarily unavailable" from the streams and bucket one of them
// just made, for as long as their leaders take to be elected.
func untilReady[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	return whileNotReady(ctx, setupAttempt, 0, nil, f)
}

// whileNotReady runs f, each try bounded by try, until it succeeds, fails
// for a reason other than JetStream not answering (notReady), ctx ends,
// or (when total is not 0) total has passed since the first try; again,
// when not nil, is told each failure tried again. A failure once ctx ended
// names both.
func whileNotReady[T any](ctx context.Context, try, total time.Duration, again func(error), f func(context.Context) (T, error)) (T, error) {
	first := time.Now()
	wait := retryMin
	for {
		tctx, cancel := context.WithTimeout(ctx, try)
		v, err := f(tctx)
		cancel()
		switch {
		case err == nil:
			return v, nil
		case ctx.Err() != nil:
			return v, fmt.Errorf("%w (the last try: %w)", ctx.Err(), err)
		case !notReady(err) || (total > 0 && time.Since(first)+wait > total):
			return v, err
		}
		if again != nil {
			again(err)
		}
		if clock.Sleep(ctx, wait) != nil {
			return v, fmt.Errorf("%w (the last try: %w)", ctx.Err(), err)
		}
		wait = min(2*wait, retryMax)
	}
}

// notReady reports whether err says that JetStream did not answer for now
// (transient) or answered that it is not available yet (a 503 other than
// JetStream not being enabled at all).
func notReady(err error) bool {
	if transient(err) {
		return true
	}
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.Code == http.StatusServiceUnavailable &&
		ae.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabled && ae.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabledForAccount
}
