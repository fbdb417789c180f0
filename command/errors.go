package command

import "errors"

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
	// Panic is the value the handler panicked with (Err then reads
	// "panic: <value>"); nil when the handler did not panic.
	Panic any
	Stack []byte // the panicking goroutine's stack, when Panic is set
}

// Error reports the command's name and what went wrong.
func (e *Error) Error() string { return "command " + e.Command + ": " + e.Err.Error() }

// Unwrap returns the underlying error, so errors.Is and errors.As see the
// handler's own errors.
func (e *Error) Unwrap() error { return e.Err }
