package actor

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/akgentic/akgentic-go/message"
)

var (
	// ErrActorDead is returned when the target actor cannot receive: it was
	// stopped, or its memory was collected without a stop. Returned errors
	// wrap it and name the address; check with errors.Is.
	ErrActorDead = errors.New("actor: dead actor")

	// ErrTimeout is matched (errors.Is) by the *TimeoutError an ask or a
	// listen returns when its context's deadline passes.
	ErrTimeout = errors.New("actor: timeout")

	// ErrNotDeliverable is returned by a send to a snapshot or stopped
	// address (one deserialized or kept for history): it names an actor but
	// cannot reach one. The error returned wraps it and names the address.
	ErrNotDeliverable = errors.New("actor: address cannot deliver")

	// ErrStopped is the cause of a stop asked for by Context.Stop,
	// System.Stop or a StopRecursively (Context.Context is cancelled with
	// it), and of every actor's context once it has ended.
	ErrStopped = errors.New("actor: stopped")

	// ErrUnhandled is returned by a Receive that does not handle a message.
	// The runtime logs "Unknown message" at warning level, reports nothing
	// else, and the turn ends normally.
	ErrUnhandled = errors.New("actor: message not handled")

	// ErrConsumed answers an ask whose message a running turn removed from
	// the mailbox with Context.ConsumeMailbox, so the asker does not hang.
	ErrConsumed = errors.New("actor: message consumed from the mailbox before its turn")

	// ErrSelfAsk is returned by an ask from an actor to itself, which would
	// deadlock.
	ErrSelfAsk = errors.New("actor: an actor cannot ask itself")

	// ErrShutdown is returned by operations on a system that shut down.
	ErrShutdown = errors.New("actor: system shut down")
)

// TimeoutError is returned by an ask whose context deadline passed before
// the handler answered. The message is not withdrawn: it is still handled
// later and its reply discarded.
type TimeoutError struct {
	Op          string           // "ask" or "listen"
	Target      *message.Address // the asked actor; nil for listen
	MessageType string           // the type name of the message asked
	Cause       error            // the context's error
}

// Error describes the failure.
func (e *TimeoutError) Error() string {
	if e.Target == nil {
		return fmt.Sprintf("actor: %s timed out: %v", e.Op, e.Cause)
	}
	return fmt.Sprintf("actor: %s %s to %s timed out: %v", e.Op, e.MessageType, e.Target, e.Cause)
}

// Unwrap returns ErrTimeout and the context's error, so that errors.Is
// matches either.
func (e *TimeoutError) Unwrap() []error { return []error{ErrTimeout, e.Cause} }

func waitError(ctx context.Context, op string, target *message.Address, msg any) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil {
		err = cause
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &TimeoutError{Op: op, Target: target, MessageType: message.TypeName(msg), Cause: err}
	}
	if target == nil {
		return fmt.Errorf("actor: %s: %w", op, err)
	}
	return fmt.Errorf("actor: %s %s to %s: %w", op, message.TypeName(msg), target, err)
}

func deadError(a *message.Address) error {
	return fmt.Errorf("%w: %s", ErrActorDead, a)
}

// WarningError is a soft failure: a handler that returns one (or an error
// type embedding it) gets a WarningMessage instead of an ErrorMessage, and
// the turn is still marked processed. Its content type is the name of
// the concrete error type, "WarningError" by default.
type WarningError struct {
	Msg string
	Err error // optional cause
}

// NewWarning returns a *WarningError with the formatted text.
func NewWarning(format string, args ...any) *WarningError {
	return &WarningError{Msg: fmt.Sprintf(format, args...)}
}

// Error describes the failure.
func (w *WarningError) Error() string {
	switch {
	case w.Msg == "" && w.Err != nil:
		return w.Err.Error()
	case w.Err != nil:
		return w.Msg + ": " + w.Err.Error()
	}
	return w.Msg
}

// Unwrap returns the cause.
func (w *WarningError) Unwrap() error { return w.Err }

func (*WarningError) warning() {}

type warning interface {
	error
	warning()
}

// IsWarning reports whether err is or wraps a WarningError (or a type
// embedding one), and returns it.
func IsWarning(err error) (error, bool) {
	var w warning
	if errors.As(err, &w) {
		return w, true
	}
	return nil, false
}

// PanicError is the error a recovered panic becomes.
type PanicError struct {
	Value any    // what was passed to panic
	Stack string // debug.Stack at the recovery
}

// Error describes the failure.
func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Unwrap returns the panic value when it is an error.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

// contentType names an error for a NotificationMessage: the concrete type
// of the warning or error, "panic" for a non-error panic value.
func contentType(err error) string {
	var p *PanicError
	if errors.As(err, &p) {
		if e, ok := p.Value.(error); ok {
			return typeName(e)
		}
		return "panic"
	}
	if w, ok := IsWarning(err); ok {
		return typeName(w)
	}
	return typeName(unwrapFmt(err))
}

// unwrapFmt looks through fmt.Errorf's wrappers (which say nothing about
// what failed) to the first error of another type.
func unwrapFmt(err error) error {
	for {
		t := reflect.TypeOf(err)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.PkgPath() != "fmt" {
			return err
		}
		next := errors.Unwrap(err)
		if next == nil {
			if m, ok := err.(interface{ Unwrap() []error }); ok && len(m.Unwrap()) > 0 {
				next = m.Unwrap()[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}

func typeName(v any) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "<nil>"
	}
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}
