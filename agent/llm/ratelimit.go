package llm

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/akgentic/akgentic-go/internal/clock"
)

// RateLimit is a provider's limit on one model: requests and
// tokens (prompt plus completion) per minute; 0 is no limit.
type RateLimit struct {
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int `json:"tokens_per_minute,omitempty"`
}

// RateLimiter paces the model calls of every runner that shares it (a
// team's, or several teams'): one token bucket of requests and one of
// tokens per provider endpoint and model, each holding a minute's worth
// and refilling continuously; and a 429 answered with Retry-After to any
// of them pauses every call to that endpoint and model until then,
// instead of each runner discovering it alone. A call waits for its turn
// before it is sent, as long as its context lets it (a stop or a cancel
// ends the wait with the context's error). It is safe for concurrent use.
//
// A call is charged, before it is sent, its estimated prompt (the spend
// ceilings' estimate) plus its max_tokens when it has one, else
// rateOutputEstimate (1,024) completion tokens, not the model's maximum
// output; the charge is capped at the bucket's size. When the response
// comes the charge is reconciled with what the call really used: the
// difference is charged, or given back, and a refund wakes the calls
// waiting for that bucket at once. An answer without usage (a stream
// whose server sent no usage chunk) is reconciled with an estimate: the
// prompt's plus its answer's size, at the same bytes per token; a failed
// call with its prompt's.
type RateLimiter struct {
	limits map[string]RateLimit
	keys   []string // longest first
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	buckets map[string]*bucket
	waiter  int // the id of the last wait registered in a bucket
}

// NewRateLimiter returns a limiter with limits per model name, matched as
// the price table matches (the longest key that is a substring of the
// model name; the key "" matches every model). A model without a limit is
// paced by Retry-After pauses only. now and sleep are its clock (nil: the
// real time and a timer that ends early with its context); a test injects
// a fake one. sleep must end early, with the context's error, when its
// context is done: that is also how a call giving tokens back wakes the
// calls waiting for them. A negative limit is an error naming it.
func NewRateLimiter(limits map[string]RateLimit, now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) (*RateLimiter, error) {
	for k, l := range limits {
		if l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 {
			return nil, fmt.Errorf("llm: rate limit for model %q: negative limit (requests_per_minute %d, tokens_per_minute %d)",
				k, l.RequestsPerMinute, l.TokensPerMinute)
		}
	}
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = clock.Sleep
	}
	l := &RateLimiter{limits: maps.Clone(limits), now: now, sleep: sleep, buckets: map[string]*bucket{}}
	l.keys = slices.SortedFunc(maps.Keys(l.limits), func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return l, nil
}

// bucket is one endpoint and model's state.
type bucket struct {
	limit      RateLimit
	reqs, toks float64   // available
	at         time.Time // of the last refill
	until      time.Time // paused until (a Retry-After)
	// waiters ends the sleep of each call waiting for this bucket, by the
	// id the limiter gave it: a refund calls them all.
	waiters map[int]context.CancelFunc
}

// refund gives back tokens (up to the bucket's size) and wakes the calls
// waiting for it, to try again at once.
func (b *bucket) refund(tokens float64) {
	b.toks = min(float64(b.limit.TokensPerMinute), b.toks+tokens)
	for _, wake := range b.waiters {
		wake()
	}
	clear(b.waiters)
}

// bucket returns the bucket of key, made full at now on first use.
func (l *RateLimiter) bucket(key, model string, now time.Time) *bucket {
	b := l.buckets[key]
	if b == nil {
		b = &bucket{at: now}
		for _, k := range l.keys {
			if strings.Contains(model, k) {
				b.limit = l.limits[k]
				break
			}
		}
		b.reqs, b.toks = float64(b.limit.RequestsPerMinute), float64(b.limit.TokensPerMinute)
		l.buckets[key] = b
	}
	return b
}

// take charges one request of tokens at now, or returns how long to wait
// before trying again.
func (b *bucket) take(now time.Time, tokens int) time.Duration {
	if now.Before(b.until) {
		return b.until.Sub(now)
	}
	rpm, tpm := float64(b.limit.RequestsPerMinute), float64(b.limit.TokensPerMinute)
	if el := now.Sub(b.at); el > 0 {
		b.reqs = min(rpm, b.reqs+rpm*el.Minutes())
		b.toks = min(tpm, b.toks+tpm*el.Minutes())
		b.at = now
	}
	t := min(float64(tokens), tpm)
	var wait time.Duration
	if rpm > 0 && b.reqs < 1 {
		wait = max(wait, time.Duration((1-b.reqs)/rpm*float64(time.Minute))+1)
	}
	if tpm > 0 && b.toks < t {
		wait = max(wait, time.Duration((t-b.toks)/tpm*float64(time.Minute))+1)
	}
	if wait > 0 {
		return wait
	}
	if rpm > 0 {
		b.reqs--
	}
	if tpm > 0 {
		b.toks -= t
	}
	return 0
}

// pauseKey is the context key of the pause a 429's Retry-After applies
// (retryDoer.Do).
type pauseKey struct{}

// wait waits for the turn of one call of model at the endpoint of mc,
// charged tokens. It returns the context to send the call with, which
// carries the bucket's pause, and reconcile, to call once with the tokens
// the call used (or an estimate of them): the difference with the charge
// is charged or given back. A wait ends early when another call gives
// tokens back. A nil limiter does nothing.
func (l *RateLimiter) wait(ctx context.Context, mc ModelConfig, model string, tokens int) (context.Context, func(used int), error) {
	if l == nil {
		return ctx, func(int) {}, nil
	}
	key := mc.provider() + " " + mc.BaseURL + " " + model
	var charged float64
	for {
		if ctx.Err() != nil {
			return ctx, nil, fmt.Errorf("llm: waiting for the rate limit of %s: %w", model, context.Cause(ctx))
		}
		l.mu.Lock()
		now := l.now()
		b := l.bucket(key, model, now)
		d := b.take(now, tokens)
		if d <= 0 {
			charged = min(float64(tokens), float64(b.limit.TokensPerMinute))
			l.mu.Unlock()
			break
		}
		sleepCtx, wake := context.WithCancel(ctx)
		l.waiter++
		id := l.waiter
		if b.waiters == nil {
			b.waiters = map[int]context.CancelFunc{}
		}
		b.waiters[id] = wake
		l.mu.Unlock()
		err := l.sleep(sleepCtx, d)
		l.mu.Lock()
		delete(b.waiters, id)
		l.mu.Unlock()
		wake()
		if ctx.Err() != nil {
			return ctx, nil, fmt.Errorf("llm: waiting for the rate limit of %s: %w", model, context.Cause(ctx))
		}
		if err != nil && sleepCtx.Err() == nil { // not woken: the sleep itself failed
			return ctx, nil, fmt.Errorf("llm: waiting for the rate limit of %s: %w", model, err)
		}
	}
	pause := func(d time.Duration) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if b := l.buckets[key]; b != nil {
			if until := l.now().Add(d); until.After(b.until) {
				b.until = until
			}
		}
	}
	reconcile := func(used int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		b := l.buckets[key]
		if b == nil || b.limit.TokensPerMinute == 0 {
			return
		}
		switch diff := float64(max(used, 0)) - charged; {
		case diff < 0:
			b.refund(-diff)
		case diff > 0:
			b.toks -= diff // a debt the refill pays before the next call
		}
	}
	return context.WithValue(ctx, pauseKey{}, pause), reconcile, nil
}

// sharePause tells the rate limiter of the request's context (if any)
// that the provider answered 429 with a Retry-After: every call to that
// endpoint and model waits wait.
func sharePause(ctx context.Context, resp *http.Response, wait time.Duration) {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		return
	}
	if pause, ok := ctx.Value(pauseKey{}).(func(time.Duration)); ok {
		pause(wait)
	}
}
