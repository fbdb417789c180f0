package mcp

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What each kind of content becomes in the model's tool message.
func TestRender(t *testing.T) {
	long := strings.Repeat("a line of a file\n", 10)
	for _, tc := range []struct {
		name string
		r    *sdk.CallToolResult
		want string
	}{
		{"empty", &sdk.CallToolResult{}, "(no content)"},
		{"texts", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, "a\nb"},
		{"media", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ImageContent{MIMEType: "image/jpeg", Data: make([]byte, 10)},
			&sdk.AudioContent{Data: make([]byte, 3)}}},
			"[image image/jpeg, 10 bytes]\n[audio of unknown type, 3 bytes]"},
		{"resources", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ResourceLink{Name: "readme", URI: "file:///r.md"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", Text: "hello"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.bin", MIMEType: "application/zip", Blob: make([]byte, 7)}}}},
			"[resource link readme: file:///r.md]\n[resource file:///a.txt]\nhello\n[resource file:///b.bin, application/zip, 7 bytes]"},
		{"structured content repeated in a text", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: `{"sum": 6, "n": 3}`}},
			StructuredContent: map[string]any{"n": 3, "sum": 6}}, `{"sum": 6, "n": 3}`},
		{"structured content alone", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: "done"}},
			StructuredContent: map[string]any{"n": 3}}, "done\n{\"n\":3}"},
		{"structured content that is the text again", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: long}},
			StructuredContent: map[string]any{"content": long}}, long},
		{"structured content that is the image again", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: []byte("PNG!")}},
			StructuredContent: map[string]any{"content": []any{map[string]any{"type": "image", "mimeType": "image/png", "data": "UE5HIQ=="}}}},
			"[image image/png, 4 bytes]"},
		{"structured content that adds to a long text", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: long}},
			StructuredContent: map[string]any{"content": long, "lines": 1}},
			long + "\n" + `{"content":"[the text above]","lines":1}`},
		{"structured binary the content did not carry", &sdk.CallToolResult{
			Content: []sdk.Content{&sdk.TextContent{Text: "a file"}},
			StructuredContent: map[string]any{"file": map[string]any{"type": "resource",
				"resource": map[string]any{"uri": "file:///x", "mimeType": "application/zip", "blob": "UE5HIQ=="}}}},
			"a file\n" + `{"file":"[resource application/zip, 4 bytes]"}`},
	} {
		if got := render(tc.r); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A long result is cut at a character boundary and says so.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 4, "abcd\n[truncated at 4 bytes]"},
		{"ab\u00e9cd", 3, "ab\n[truncated at 2 bytes]"}, // é is 2 bytes
	} {
		if got := truncate(tc.in, tc.max); got != tc.want {
			t.Errorf("%q/%d: %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "0123456789"}}}
	if out, err := answer("s", "t", r, 5); err != nil || out != "01234\n[truncated at 5 bytes]" {
		t.Errorf("answer: %q %v", out, err)
	}
}
