package command

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDispatch checks that no input panics, that an unidentified command is
// ErrNotRecognized and nothing else, and that every failure of an identified
// command names that command.
func FuzzDispatch(f *testing.F) {
	for _, seed := range []string{
		"/hire_member Developer name=@Ada", "/hire_member x=y", `/hire_member Developer "Alice Smith"`,
		"/search_planning status=pending foo", "/search_planning #urgent", `/search_planning "#urgent"`,
		`/hire_member "Dev`, `/nonsense "x`, "/deploy now", "/etc/passwd is missing", "/", "/ ", "",
		"/note text=a=b", "/typed 1 f=2 b=yes d=1m l=a,b", `/typed 1 l='["a"]'`, "/boom", "/fail", "/undeclared",
		"/help", "/help hire_member", `/note a\`, "/note 'x", "/note \"a\\\"#\" #b", "/note \xff\xfe", "/_expand_media_refs !!x.png",
	} {
		f.Add(seed)
	}
	r, tm := newTestRegistry(f)
	f.Fuzz(func(t *testing.T, text string) {
		tm.reset() // keep memory flat over millions of inputs
		got, err := r.Dispatch(t.Context(), text)

		// The oracle: which command, if any, the text names.
		line := strings.TrimPrefix(strings.TrimLeft(text, shellSpace), "/")
		name := firstWord(line)
		if words, splitErr := split(line); splitErr == nil {
			name = ""
			if len(words) > 0 {
				name = words[0]
			}
		}
		if !r.Has(name) {
			if !errors.Is(err, ErrNotRecognized) || got != "" {
				t.Fatalf("Dispatch(%q) = %q, %v; want ErrNotRecognized for %q", text, got, err, name)
			}
			return
		}
		if err != nil {
			t.Fatalf("Dispatch(%q) identified %q but returned error %v", text, name, err)
		}
		if strings.HasPrefix(got, "Command '") && !strings.HasPrefix(got, "Command '"+name+"' failed: ") {
			t.Fatalf("Dispatch(%q) = %q: a failure that does not name %q", text, got, name)
		}
		if strings.HasPrefix(got, "Command '"+name+"' failed: ") && len(got) == len("Command '"+name+"' failed: ") {
			t.Fatalf("Dispatch(%q) = %q: a failure without a reason", text, got)
		}
	})
}
