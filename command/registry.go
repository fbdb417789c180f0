package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// builtinOwner is the owner label (Descriptor.ToolCard) of the built-in help
// command.
const builtinOwner = "CommandRegistry"

// Registry is a table of commands keyed by name. It is safe for concurrent
// use; handlers run on the caller's goroutine, without any registry lock held.
type Registry struct {
	// Logger receives each recovered handler panic, with its stack; nil
	// means slog.Default(). Set it before the registry is shared.
	Logger *slog.Logger

	mu     sync.RWMutex
	byName map[string]*entry
	order  []*entry // registration order, for Descriptors and /help
	help   *entry   // the built-in help, listed after every registered command
}

type entry struct {
	cmd   *Command
	owner string
}

// NewRegistry returns a registry holding only the built-in help command.
func NewRegistry() *Registry {
	r := &Registry{byName: make(map[string]*entry)}
	help := r.helpCommand()
	r.help = &entry{cmd: help, owner: builtinOwner}
	r.byName[help.name] = r.help
	return r
}

// Register adds commands under an owner label (the tool card or component
// that provides them, reported as Descriptor.ToolCard). It adds all of them or
// none: a name already taken, or taken twice in cmds, is an error that names
// the command and both owners, and a mistake in a declaration (see [New]) is
// an error naming the command.
func (r *Registry) Register(owner string, cmds ...*Command) error {
	if owner == "" {
		return errors.New("command: register: empty owner label")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	batch := make(map[string]bool, len(cmds))
	for _, c := range cmds {
		if c == nil {
			return fmt.Errorf("command: register %s: nil command", owner)
		}
		if err := c.validate(); err != nil {
			return fmt.Errorf("command: register %s: %w", owner, err)
		}
		if e := r.byName[c.name]; e != nil {
			return fmt.Errorf("%w: %s is provided by both %s and %s", errDuplicate, c.name, e.owner, owner)
		}
		if batch[c.name] {
			return fmt.Errorf("%w: %s is provided twice by %s", errDuplicate, c.name, owner)
		}
		batch[c.name] = true
	}
	for _, c := range cmds {
		e := &entry{cmd: c, owner: owner}
		r.byName[c.name] = e
		r.order = append(r.order, e)
	}
	return nil
}

// Has reports whether a command called name is registered.
func (r *Registry) Has(name string) bool { return r.lookup(name) != nil }

// Descriptors returns the discovery record of every command in registration
// order: each Register call's commands in the order given, calls in the
// order made, and the built-in help last. The result is the caller's to keep.
func (r *Registry) Descriptors() []Descriptor {
	es := r.entries()
	out := make([]Descriptor, len(es))
	for i, e := range es {
		out[i] = describe(e.cmd, e.owner)
	}
	return out
}

func (r *Registry) lookup(name string) *entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

// entries returns a snapshot of the commands in registration order, the
// built-in help last.
func (r *Registry) entries() []*entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*entry, 0, len(r.order)+1)
	return append(append(out, r.order...), r.help)
}

func notRecognized(name string) error {
	if name == "" {
		return fmt.Errorf("%w: no command name", ErrNotRecognized)
	}
	return fmt.Errorf("%w: %q", ErrNotRecognized, name)
}

// invoke binds args and runs c. Every failure comes back as an [*Error]
// naming c, a panic included. When asText is set the result is rendered
// under the same protection, since a String method may panic too.
func (r *Registry) invoke(ctx context.Context, c *Command, args []arg, asText bool) (v any, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			stack := debug.Stack()
			logger := r.Logger
			if logger == nil {
				logger = slog.Default()
			}
			logger.ErrorContext(ctx, "command panicked", "command", c.name, "panic", rec, "stack", string(stack))
			v, err = nil, &Error{Command: c.name, Err: fmt.Errorf("panic: %v", rec), Panic: rec, Stack: stack}
		}
	}()
	in, err := c.bind(args)
	if err != nil {
		return nil, &Error{Command: c.name, Err: err}
	}
	if v, err = c.run(ctx, in); err != nil {
		return nil, &Error{Command: c.name, Err: err}
	}
	if asText {
		return render(v), nil
	}
	return v, nil
}

// namedArg is a keyword argument made by [Named].
type namedArg struct {
	name  string
	value any
}

// Named returns a keyword argument binding the parameter called name, to
// pass among the arguments of [Call] or of a function made by [Callable].
// The value it returns means nothing elsewhere.
func Named(name string, value any) any { return namedArg{name: name, value: value} }

// Callable resolves the command called name into a typed function returning
// its native value. R must be the handler's result type, or an interface that
// type implements (any always works); a mismatch is an [*Error] here, not at
// call time. An unknown name is an error wrapping [ErrNotRecognized].
//
// The function takes arguments as Go values of the declared parameter types
// (string, int, float64, bool, time.Duration, []string), positionally in
// declaration order and then as [Named] keywords, under the same binding rules
// as text; nil leaves an optional parameter unbound. Every failure, a handler
// panic included, is returned as an [*Error] naming the command; the handler's
// own error is kept inside it for errors.Is and errors.As.
func Callable[R any](r *Registry, name string) (func(ctx context.Context, args ...any) (R, error), error) {
	e := r.lookup(name)
	if e == nil {
		return nil, notRecognized(name)
	}
	c := e.cmd
	if c.zero != nil { // a concrete result type can be checked now
		if _, ok := c.zero.(R); !ok {
			return nil, &Error{Command: c.name, Err: fmt.Errorf("returns %T, not %s", c.zero, typeName[R]())}
		}
	}
	return func(ctx context.Context, args ...any) (R, error) {
		var zero R
		bound := make([]arg, len(args))
		for i, a := range args {
			if kw, ok := a.(namedArg); ok {
				bound[i] = arg{keyword: true, name: kw.name, value: kw.value, native: true}
			} else {
				bound[i] = arg{value: a, native: true}
			}
		}
		v, err := r.invoke(ctx, c, bound, false)
		if err != nil || v == nil {
			return zero, err
		}
		out, ok := v.(R)
		if !ok {
			return zero, &Error{Command: c.name, Err: fmt.Errorf("returned %T, not %s", v, typeName[R]())}
		}
		return out, nil
	}, nil
}

// Call resolves the command called name and calls it once; see [Callable].
func Call[R any](ctx context.Context, r *Registry, name string, args ...any) (R, error) {
	f, err := Callable[R](r, name)
	if err != nil {
		var zero R
		return zero, err
	}
	return f(ctx, args...)
}

// typeName names the type R, interfaces included.
func typeName[R any]() string { return fmt.Sprintf("%T", (*R)(nil))[1:] }
