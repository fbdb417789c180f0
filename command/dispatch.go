package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/shlex"
)

// shellSpace holds the characters that separate words, as shlex sees them.
const shellSpace = " \t\r\n"

// Dispatch runs the command a person typed, such as
// "/hire_member Developer name=@Ada", and returns its result rendered as
// text: a string as is, a fmt.Stringer or error through its method, anything
// else as JSON.
//
// One leading "/" is stripped and the rest is split shell-style; the first
// word names the command. When it names none (or there is no word), Dispatch
// returns an error wrapping [ErrNotRecognized] and invokes nothing. Once the
// command is identified, Dispatch never returns an error: an unbalanced
// quote, a binding or coercion failure, the handler's error or panic all come
// back as "Command '<name>' failed: <reason>". If the text cannot be split,
// the command is the first whitespace-separated word.
func (r *Registry) Dispatch(ctx context.Context, text string) (string, error) {
	line := strings.TrimPrefix(strings.TrimLeft(text, shellSpace), "/")
	words, splitErr := split(line)
	var name string
	switch {
	case splitErr != nil:
		name = firstWord(line)
	case len(words) > 0:
		name = words[0]
	}
	e := r.lookup(name)
	if e == nil {
		return "", notRecognized(name)
	}
	if splitErr != nil {
		return failure(name, fmt.Errorf("cannot split the arguments: %w", splitErr)), nil
	}
	v, err := r.invoke(ctx, e.cmd, classify(e.cmd, words[1:]), true)
	if err != nil {
		return failure(name, err.(*Error).Err), nil // invoke only returns *Error
	}
	return v.(string), nil
}

func failure(name string, reason error) string {
	return "Command '" + name + "' failed: " + reason.Error()
}

// classify turns words into arguments: a word is a keyword only when
// the text before its first "=" names a parameter of c; its value is the
// rest. Every other word is positional, "x=y" included.
func classify(c *Command, words []string) []arg {
	args := make([]arg, len(words))
	for i, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok && c.param(k) >= 0 {
			args[i] = arg{keyword: true, name: k, text: v}
		} else {
			args[i] = arg{text: w}
		}
	}
	return args
}

// split splits line into words with shlex, keeping words that start with
// "#" (shlex would read them as comments).
func split(line string) ([]string, error) {
	return shlex.Split(escapeHashes(line))
}

// escapeHashes puts a backslash before every "#" that starts a word outside
// quotes: shlex reads such a "#" as the start of a comment and drops the rest
// of the line. The scan follows shlex's own states, so a "#" inside a word or
// inside quotes, which shlex keeps anyway, is left alone.
func escapeHashes(line string) string {
	if !strings.Contains(line, "#") {
		return line
	}
	const (
		between      = iota // between words: a "#" here would start a comment
		inWord              // in an unquoted word
		escaped             // after a backslash outside quotes
		inDouble            // inside "..."
		escapedQuote        // after a backslash inside "..."
		inSingle            // inside '...'
	)
	var b strings.Builder
	state, copied := between, 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch state {
		case between, inWord:
			switch {
			case strings.IndexByte(shellSpace, c) >= 0:
				state = between
			case c == '#' && state == between:
				b.WriteString(line[copied:i])
				b.WriteByte('\\')
				copied, state = i, inWord
			case c == '"':
				state = inDouble
			case c == '\'':
				state = inSingle
			case c == '\\':
				state = escaped
			default:
				state = inWord
			}
		case escaped:
			state = inWord
		case inDouble:
			switch c {
			case '"':
				state = inWord
			case '\\':
				state = escapedQuote
			}
		case escapedQuote:
			state = inDouble
		case inSingle:
			if c == '\'' {
				state = inWord
			}
		}
	}
	if b.Len() == 0 {
		return line
	}
	b.WriteString(line[copied:])
	return b.String()
}

// firstWord returns the first whitespace-separated word of s.
func firstWord(s string) string {
	s = strings.TrimLeft(s, shellSpace)
	if i := strings.IndexAny(s, shellSpace); i >= 0 {
		return s[:i]
	}
	return s
}

// render turns a command's native result into its reply text.
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case fmt.Stringer:
		return x.String()
	case error:
		return x.Error()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
