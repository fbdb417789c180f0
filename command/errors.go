package command

import (
	"errors"
	"fmt"
)

// ErrNotRecognized is returned by [Registry.Dispatch] when the text names no
// registered command (its first word is unknown, or there is no word at all),
// and by [Call] and [Callable] for an unknown name. Nothing was invoked; a
// caller handling typed text should pass the original text on untouched.
var ErrNotRecognized = errors.New("command: not recognized")

// errDuplicate is wrapped by [Registry.Register] when a command name is
// already taken, by another tool or within the same call.
var errDuplicate = errors.New("command: duplicate command name")

// Error is a failure of an identified command: its arguments did not bind or
// coerce, or its handler returned an error or panicked. [Call] returns it;
// [Registry.Dispatch] renders it as "Command '<name>' failed: <reason>".
type Error struct {
	Command string // the command's name
	Err     error  // what went wrong; the handler's own error is kept as is
}

// Error reports the command's name and what went wrong.
func (e *Error) Error() string { return "command " + e.Command + ": " + e.Err.Error() }

// Unwrap returns the underlying error, so errors.Is and errors.As see the
// handler's own errors.
func (e *Error) Unwrap() error { return e.Err }

// PanicError is the error a recovered handler panic becomes. It is always
// wrapped in an [*Error]; use errors.As to reach it.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
}

// Error reports the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }
