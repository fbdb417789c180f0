package mcp

import (
	"strings"
	"testing"
)

// Issue 16: ${NAME} in Env and Headers values.
func TestExpand(t *testing.T) {
	t.Setenv("MCP_TEST_A", "alpha")
	for in, want := range map[string]string{
		"plain":                         "plain",
		"${MCP_TEST_A}":                 "alpha",
		"x-${MCP_TEST_A}-${MCP_TEST_A}": "x-alpha-alpha",
		"$$5 and $HOME and $":           "$5 and $HOME and $",
		"p@$$w0rd$":                     "p@$w0rd$",
	} {
		if got, err := expand(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"${MCP_TEST_UNSET_Y}": "${MCP_TEST_UNSET_Y}: the environment variable is not set",
		"a ${MCP_TEST_A":      `unclosed ${ in "${MCP_TEST_A"`,
		"${}":                 "${}: the environment variable is not set",
	} {
		if _, err := expand(in); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// expand never panics, and a value without "$" comes back as it is.
func FuzzExpand(f *testing.F) {
	for _, seed := range []string{"", "$", "$$", "${", "${}", "${PATH}", "a$b${c", "$${PATH}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := expand(s)
		if !strings.Contains(s, "$") && (err != nil || out != s) {
			t.Fatalf("%q: %q %v", s, out, err)
		}
	})
}

// A stdio server's stderr is kept to its last tailSize bytes, whitespace
// collapsed.
func TestStderrTail(t *testing.T) {
	var tl tail
	_, _ = tl.Write([]byte("starting\n"))
	_, _ = tl.Write([]byte(strings.Repeat("x", tailSize-4) + "\nfatal:  bad  flag\n"))
	// 1048 bytes written: "starting\n" and 15 x's are dropped.
	if got := tl.String(); got != strings.Repeat("x", tailSize-19)+" fatal: bad flag" {
		t.Fatalf("tail %q (%d bytes)", got, len(got))
	}
}

// Issue 16: model tool names keep to OpenAI's charset and length.
func TestModelName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"fs", "read_file", "fs_read_file"},
		{"gh", "repos.list-all", "gh_repos_list-all"},
		{"x", "héllo wörld", "x_h__llo_w__rld"},
		{"long", strings.Repeat("t", 70), "long_" + strings.Repeat("t", 59)},
	} {
		if got := modelName(tc.server, tc.tool); got != tc.want {
			t.Errorf("%s/%s: %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
}
