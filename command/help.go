package command

import (
	"context"
	"fmt"
	"strings"
)

// helpCommand is the built-in "/help [command]".
func (r *Registry) helpCommand() *Command {
	topic := NewParam[string]("command", "The command to describe; all commands when omitted.").Optional()
	return New("help", "List the commands with their arguments, or describe one command in detail.",
		func(_ context.Context, in Args) (string, error) {
			if name, ok := topic.Lookup(in); ok {
				return r.helpFor(strings.TrimPrefix(name, "/"))
			}
			return r.helpList(), nil
		}, topic)
}

// helpList lists every command but the internal ones (named "_…"), with its
// arguments and the first line of its description.
func (r *Registry) helpList() string {
	var b strings.Builder
	b.WriteString("Commands:")
	for _, e := range r.entries() {
		if strings.HasPrefix(e.cmd.name, "_") {
			continue
		}
		b.WriteString("\n  ")
		b.WriteString(usage(e.cmd))
		if summary, _, _ := strings.Cut(e.cmd.description, "\n"); summary != "" {
			b.WriteString(" - ")
			b.WriteString(summary)
		}
	}
	b.WriteString("\nType /help <command> for its arguments in detail.")
	return b.String()
}

// helpFor describes one command: usage, description, owner and arguments.
func (r *Registry) helpFor(name string) (string, error) {
	e := r.lookup(name)
	if e == nil {
		return "", fmt.Errorf("no command named %q; type /help for the list", name)
	}
	var b strings.Builder
	b.WriteString(usage(e.cmd))
	if e.cmd.description != "" {
		b.WriteString("\n")
		b.WriteString(e.cmd.description)
	}
	fmt.Fprintf(&b, "\nProvided by %s.", e.owner)
	if len(e.cmd.params) == 0 {
		return b.String(), nil
	}
	b.WriteString("\nArguments (in this order, or by name as name=value):")
	for _, p := range e.cmd.params {
		in := p.info()
		fmt.Fprintf(&b, "\n  %s (%s, ", in.name, in.kind)
		switch def := p.jsonDefault(); {
		case in.required:
			b.WriteString("required)")
		case !in.hasDefault:
			b.WriteString("optional)")
		default:
			if s, ok := def.(string); ok {
				fmt.Fprintf(&b, "default %q)", s)
			} else {
				fmt.Fprintf(&b, "default %s)", render(def))
			}
		}
		if in.description != "" {
			b.WriteString(": ")
			b.WriteString(in.description)
		}
	}
	return b.String(), nil
}

// usage is the one-line synopsis: "/name <required> [optional]".
func usage(c *Command) string {
	var b strings.Builder
	b.WriteString("/")
	b.WriteString(c.name)
	for _, p := range c.params {
		if in := p.info(); in.required {
			fmt.Fprintf(&b, " <%s>", in.name)
		} else {
			fmt.Fprintf(&b, " [%s]", in.name)
		}
	}
	return b.String()
}
