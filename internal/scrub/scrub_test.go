package scrub

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStringRemovesRegisteredAndKeyShaped(t *testing.T) {
	Register("my-proxy-secret-1234")
	Register("short") // ignored: too short to be told from a word
	for in, want := range map[string]string{
		"Incorrect API key provided: sk-proj-abcdefghijklmnop1234567890":     "Incorrect API key provided: " + Redacted,
		"upstream rejected my-proxy-secret-1234 (401)":                       "upstream rejected " + Redacted + " (401)",
		"Authorization: Bearer abc.def-ghi_jkl":                              "Authorization: Bearer " + Redacted,
		`GET https://x.test/search?api_key=0123456789abcdef&q=go`:            `GET https://x.test/search?api_key=` + Redacted + `&q=go`,
		`{"token": "t0k3n-value-here"}`:                                      `{"token": "` + Redacted + `"}`,
		"github ghp_0123456789abcdefghijklmnop and tvly-0123456789abcdefXYZ": "github " + Redacted + " and " + Redacted,
		"a short word stays, so does sk-abc and a task id 1234":              "a short word stays, so does sk-abc and a task id 1234",
		"masked by OpenAI: sk-proj-****abcd":                                 "masked by OpenAI: sk-proj-****abcd",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	err := Error(errors.Join(fs.ErrNotExist, errors.New("api_key=abcdefgh12345678")))
	if strings.Contains(err.Error(), "abcdefgh12345678") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Error = %q (is ErrNotExist: %v)", err, errors.Is(err, fs.ErrNotExist))
	}
	var pe *fs.PathError
	wrapped := Error(fmt.Errorf("open: %w", &fs.PathError{Op: "open", Path: "/x?token=abcdefgh12345678", Err: fs.ErrPermission}))
	if !errors.As(wrapped, &pe) || !errors.Is(wrapped, fs.ErrPermission) {
		t.Errorf("errors.As or errors.Is lost the chain of %q", wrapped)
	}
	for e := wrapped; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), "abcdefgh12345678") {
			t.Errorf("a level of the chain holds the secret: %q", e)
		}
	}
	plain := errors.New("nothing secret")
	if Error(plain) != plain || Error(nil) != nil {
		t.Error("an error without a secret is returned as it is")
	}
}

func FuzzString(f *testing.F) {
	f.Add("Bearer abcdefghijkl sk-0123456789abcdef0123 password=hunter2hunter2")
	f.Fuzz(func(t *testing.T, s string) {
		Register("fuzz-secret-value")
		got := String(s + " fuzz-secret-value")
		if strings.Contains(got, "fuzz-secret-value") {
			t.Errorf("String(%q) kept the registered secret: %q", s, got)
		}
		if String(got) != got {
			t.Errorf("String is not idempotent on %q", got)
		}
	})
}
