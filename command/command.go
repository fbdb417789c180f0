package command

import (
	"context"
	"fmt"
	"strings"
)

// Command is a named, described operation with declared parameters. Make one
// with [New] and add it to a [Registry] with [Registry.Register]. A Command
// holds no registry state, so the same value may be registered in several
// registries.
type Command struct {
	name        string
	description string
	params      []parameter
	run         func(context.Context, Args) (any, error)
	// zero is the zero value of the handler's result type, boxed. It is nil
	// when that type is an interface, so Callable can check a requested
	// result type when the command is resolved.
	zero any
}

// New declares a command. description is its doc text (its first line is the
// summary shown by /help). run is the handler: it gets the caller's context
// and the bound arguments, reads each value through its parameter
// ([Param.Get]), and returns the command's native result. params are the
// parameters, each made by [NewParam] or [Enum], in positional order;
// required ones must come first.
//
// New does not fail: a mistake in the declaration (a bad or repeated name, a
// nil handler, an Enum default outside its values) is reported by
// [Registry.Register].
func New[R any](name, description string, run func(ctx context.Context, in Args) (R, error), params ...parameter) *Command {
	c := &Command{name: name, description: description, params: params, zero: any(*new(R))}
	if run != nil {
		c.run = func(ctx context.Context, in Args) (any, error) { return run(ctx, in) }
	}
	return c
}

// Name returns the command's name.
func (c *Command) Name() string { return c.name }

// Args holds the arguments bound to one call of a command. A handler reads
// them through its parameters: [Param.Get] and [Param.Lookup].
type Args struct {
	params []parameter
	values []any  // one per parameter: the bound value or the default
	given  []bool // whether an argument bound the parameter
}

// validate reports every problem with the declaration that would make the
// command misbehave later.
func (c *Command) validate() error {
	if !validName(c.name) {
		return fmt.Errorf("command name %q is not a name (letters, digits, _ and -)", c.name)
	}
	if c.run == nil {
		return fmt.Errorf("command %s has no handler", c.name)
	}
	seen := make(map[string]bool, len(c.params))
	optional := ""
	for _, p := range c.params {
		if p == nil {
			return fmt.Errorf("command %s: nil parameter", c.name)
		}
		if err := p.validate(); err != nil {
			return fmt.Errorf("command %s: %w", c.name, err)
		}
		in := p.info()
		if seen[in.name] {
			return fmt.Errorf("command %s: parameter %s declared twice", c.name, in.name)
		}
		seen[in.name] = true
		switch {
		case !in.required:
			optional = in.name
		case optional != "":
			return fmt.Errorf("command %s: required parameter %s follows optional parameter %s", c.name, in.name, optional)
		}
	}
	return nil
}

// arg is one argument before binding: a keyword naming a parameter, or
// positional. Text arguments (Dispatch) are coerced from text; native ones
// (Call) are checked against the parameter's Go type.
type arg struct {
	keyword bool
	name    string // the keyword's parameter name
	text    string
	value   any
	native  bool
}

// describe names the argument in an error message.
func (a arg) describe() string {
	if a.native {
		return fmt.Sprintf("%v", a.value)
	}
	return fmt.Sprintf("%q", a.text)
}

// param returns the index of the parameter called name, or -1.
func (c *Command) param(name string) int {
	for i, p := range c.params {
		if p.info().name == name {
			return i
		}
	}
	return -1
}

// bind applies the binding rules: positionals fill parameters in
// order and may not follow a keyword; a keyword binds by name; nothing binds
// twice; every required parameter must be bound; the rest get defaults.
func (c *Command) bind(args []arg) (Args, error) {
	n := len(c.params)
	in := Args{params: c.params, values: make([]any, n), given: make([]bool, n)}
	next, keywords := 0, false
	for _, a := range args {
		var i int
		switch {
		case a.keyword:
			keywords = true
			if i = c.param(a.name); i < 0 {
				return in, fmt.Errorf("unknown argument %s (parameters: %s)", a.name, c.paramNames())
			}
		case keywords:
			return in, fmt.Errorf("positional argument %s follows keyword arguments", a.describe())
		case next >= n:
			if n == 0 {
				return in, fmt.Errorf("takes no arguments, got %s", a.describe())
			}
			return in, fmt.Errorf("too many arguments: takes at most %d (%s), got extra %s", n, c.paramNames(), a.describe())
		default:
			i = next
			next++
		}
		p := c.params[i].info()
		if in.given[i] {
			return in, fmt.Errorf("argument %s given more than once", p.name)
		}
		if a.native && a.value == nil {
			if p.required {
				return in, fmt.Errorf("argument %s: required, got nil", p.name)
			}
			continue // nil leaves an optional parameter unbound
		}
		v, err := c.coerce(i, a)
		if err != nil {
			return in, fmt.Errorf("argument %s: %w", p.name, err)
		}
		in.values[i], in.given[i] = v, true
	}
	var missing []string
	for i, p := range c.params {
		switch {
		case in.given[i]:
		case p.info().required:
			missing = append(missing, p.info().name)
		default:
			in.values[i] = p.defaultValue()
		}
	}
	if missing != nil {
		return in, fmt.Errorf("missing required argument(s): %s", strings.Join(missing, ", "))
	}
	return in, nil
}

func (c *Command) coerce(i int, a arg) (any, error) {
	if a.native {
		return c.params[i].fromValue(a.value)
	}
	return c.params[i].fromText(a.text)
}

func (c *Command) paramNames() string {
	names := make([]string, len(c.params))
	for i, p := range c.params {
		names[i] = p.info().name
	}
	return strings.Join(names, ", ")
}
