// Package scrub removes secrets from error texts before they become a
// record, a log line, a span or a page event: the keys the process was
// configured with (each component that reads one registers it) and
// anything shaped like a key (sk-..., a bearer token, key=..., a JWT, the
// prefixed tokens of the common providers). Every error text from a model
// provider, a tool, a search backend or an MCP server passes String (or
// Error) where it is made.
//
// The registry is process-wide on purpose: a key read by one component
// (an agent's model client) may be echoed in the error of another (a
// proxy in front of a search backend), so every scrub removes every key
// the process knows.
package scrub

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"sync"
)

// Redacted replaces a secret in a text.
const Redacted = "[REDACTED]"

// minSecret is the shortest registered secret removed: a shorter one
// would remove ordinary words.
const minSecret = 8

// maxSecrets bounds the registry (a process registering keys in a loop
// keeps the first ones).
const maxSecrets = 1024

var (
	mu      sync.RWMutex
	secrets = map[string]struct{}{}
	list    []string // secrets, longest first, so a key inside another is not left half
)

// Register adds secret to the texts String removes; one shorter than 8
// bytes is ignored.
func Register(secret string) {
	secret = strings.TrimSpace(secret)
	if len(secret) < minSecret {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if _, ok := secrets[secret]; ok || len(secrets) >= maxSecrets {
		return
	}
	secrets[secret] = struct{}{}
	list = append(list, secret)
	for i := len(list) - 1; i > 0 && len(list[i]) > len(list[i-1]); i-- {
		list[i], list[i-1] = list[i-1], list[i]
	}
}

// shapes are the patterns of key-shaped text. The first group, when
// there is one, is kept (the name of a key=value pair).
var shapes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`),
	regexp.MustCompile(`(?i)\b((?:(?:api|access|secret|private|client|subscription)[_-]?key|apikey|access[_-]?token|auth[_-]?token|token|secret|password|passwd|client[_-]?secret|x-api-key|authorization)["']?\s*[:=]\s*["']?)[^\s"'&,;]{8,}`),
	regexp.MustCompile(`\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`\b(gh[pousr]_|github_pat_|xox[abprs]-|tvly-|glpat-|hf_)[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{30,}`),
	regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
}

// String returns s with every registered secret and every key-shaped
// token replaced by [Redacted].
func String(s string) string {
	if s == "" {
		return s
	}
	mu.RLock()
	for _, k := range list {
		if strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, Redacted)
		}
	}
	mu.RUnlock()
	for i, re := range shapes {
		if i < 2 {
			s = re.ReplaceAllString(s, "${1}"+Redacted)
		} else {
			s = re.ReplaceAllString(s, Redacted)
		}
	}
	return s
}

// Error returns err with its text scrubbed by String, nil for nil, err
// itself when its text holds nothing to scrub. The errors it wraps are
// scrubbed too, each as it is unwrapped (a record's error chain prints
// every level), and errors.Is and errors.As still find what they wrapped:
// code that prints the fields of what errors.As finds must scrub them.
func Error(err error) error {
	if err == nil {
		return nil
	}
	switch err.(type) {
	case *scrubbed, *scrubbedJoin:
		return err
	}
	text := err.Error()
	clean := String(text)
	if clean == text && !wrapsSecret(err) {
		return err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return &scrubbedJoin{scrubbed{err: err, text: clean}, j.Unwrap()}
	}
	return &scrubbed{err: err, text: clean}
}

// wrapsSecret reports whether an error err wraps holds something String
// removes (an error whose text hides its cause's).
func wrapsSecret(err error) bool {
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		if t := e.Error(); String(t) != t {
			return true
		}
	}
	return false
}

// scrubbed is an error whose text was scrubbed; err is the original.
type scrubbed struct {
	err  error
	text string
}

func (e *scrubbed) Error() string { return e.text }

// Unwrap returns the error err wraps, scrubbed.
func (e *scrubbed) Unwrap() error { return Error(errors.Unwrap(e.err)) }

// Is reports whether err itself (not what it wraps: Unwrap goes on) is target.
func (e *scrubbed) Is(target error) bool {
	if e.err == target {
		return true
	}
	x, ok := e.err.(interface{ Is(error) bool })
	return ok && x.Is(target)
}

// As sets target to err itself (not what it wraps) when its type fits.
func (e *scrubbed) As(target any) bool {
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	if t := v.Elem().Type(); reflect.TypeOf(e.err).AssignableTo(t) {
		v.Elem().Set(reflect.ValueOf(e.err))
		return true
	}
	x, ok := e.err.(interface{ As(any) bool })
	return ok && x.As(target)
}

// scrubbedJoin is a scrubbed error that wraps several (errors.Join).
type scrubbedJoin struct {
	scrubbed
	errs []error
}

// Unwrap returns the errors err wraps, scrubbed.
func (e *scrubbedJoin) Unwrap() []error {
	out := make([]error, len(e.errs))
	for i, x := range e.errs {
		out[i] = Error(x)
	}
	return out
}
