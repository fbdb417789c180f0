package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// answer is the model's tool message for r, a result of tool of server:
// its text (see render) cut to max bytes, or a retry error carrying it
// when the server flagged the result as an error.
func answer(server, tool string, r *sdk.CallToolResult, max int) (any, error) {
	text := truncate(render(r), max)
	if r.IsError {
		return nil, llm.Retry("MCP tool %s of server %s reported an error: %s", tool, server, text)
	}
	return text, nil
}

// render joins a result's content, one line per item: text as it is;
// images, audio and binary resources (the tool message of the chat API is
// text) described as "[image image/png, 1234 bytes]"; embedded text
// resources as their URI line then their text; resource links as
// "[resource link name: uri]". The structured content follows as JSON
// unless a text item already holds the same value (the MCP spec asks
// servers to send both). An empty result is "(no content)".
func render(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			parts = append(parts, resource(c.Resource))
		default:
			b, err := json.Marshal(c)
			if err != nil {
				b = []byte(fmt.Sprintf("%T", c))
			}
			parts = append(parts, "[content "+string(b)+"]")
		}
	}
	if sc := r.StructuredContent; sc != nil && !repeated(parts, sc) {
		if b, err := json.Marshal(sc); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		return "(no content)"
	}
	return strings.Join(parts, "\n")
}

func resource(rc *sdk.ResourceContents) string {
	switch {
	case rc == nil:
		return "[resource]"
	case rc.Text != "":
		return "[resource " + rc.URI + "]\n" + rc.Text
	}
	return fmt.Sprintf("[resource %s, %s, %d bytes]", rc.URI, orUnknown(rc.MIMEType), len(rc.Blob))
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

// repeated reports whether one of texts is JSON equal to v.
func repeated(texts []string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var want any
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	for _, t := range texts {
		var got any
		if json.Unmarshal([]byte(t), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

// truncate cuts s to at most max bytes, at a character boundary, and
// says so on a last line.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n[truncated at %d bytes]", n)
}
