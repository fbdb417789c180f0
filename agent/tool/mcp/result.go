package mcp

import (
	"encoding/base64"
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
// only when it adds to that: not when a text item holds the same value
// (the MCP spec asks servers to send both), nor when all it holds is
// the content again (server-filesystem's {"content": <the text>}). In
// the JSON, a copy of a text item longer than repeatMin is "[the text
// above]" and binary data is described, never inlined. An empty result
// is "(no content)".
func render(r *sdk.CallToolResult) string {
	var (
		parts []string
		seen  = copies{texts: map[string]bool{}, blobs: map[string]string{}}
	)
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			seen.text(c.Text)
		case *sdk.ImageContent:
			parts = append(parts, binary("image", c.MIMEType, len(c.Data)))
			seen.binary(c.Data, parts[len(parts)-1])
		case *sdk.AudioContent:
			parts = append(parts, binary("audio", c.MIMEType, len(c.Data)))
			seen.binary(c.Data, parts[len(parts)-1])
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			parts = append(parts, resource(c.Resource))
			if rc := c.Resource; rc != nil {
				seen.text(rc.URI)
				seen.text(rc.Text)
				seen.binary(rc.Blob, parts[len(parts)-1])
			}
		default:
			b, err := json.Marshal(c)
			if err != nil {
				b = []byte(fmt.Sprintf("%T", c))
			}
			parts = append(parts, "[content "+string(b)+"]")
		}
	}
	if sc, ok := normal(r.StructuredContent); ok && !repeated(parts, sc) {
		if v, ok := seen.adds(sc); ok {
			if b, err := json.Marshal(v); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 {
		return "(no content)"
	}
	return strings.Join(parts, "\n")
}

func binary(kind, mime string, n int) string {
	return fmt.Sprintf("[%s %s, %d bytes]", kind, orUnknown(mime), n)
}

// repeatMin is the length from which a text item's copy in the structured
// content is left out of its JSON.
const repeatMin = 80

// copies are the values a result's content already gave the model: its
// texts, and its binary data (base64, as JSON carries it) with their
// descriptions.
type copies struct {
	texts map[string]bool
	blobs map[string]string // base64 -> description
}

func (cp copies) text(s string) {
	if s != "" {
		cp.texts[s] = true
	}
}

func (cp copies) binary(data []byte, description string) {
	if len(data) > 0 {
		cp.blobs[base64.StdEncoding.EncodeToString(data)] = description
	}
}

// adds returns v (a JSON value) with what the content already holds
// replaced, and whether anything else is left: a string that is a text
// item (replaced by "[the text above]" if longer than repeatMin) or
// binary data (by its description) is no addition, nor is an object or
// array of no additions. Binary data the content did not carry (an
// object of type image, audio or resource with data or a blob) is
// described too; it is an addition.
func (cp copies) adds(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		if d, ok := cp.blobs[v]; ok {
			return d, false
		}
		if cp.texts[v] {
			if len(v) > repeatMin {
				return "[the text above]", false
			}
			return v, false
		}
		return v, true
	case []any:
		out, added := make([]any, len(v)), false
		for i, e := range v {
			var a bool
			out[i], a = cp.adds(e)
			added = added || a
		}
		return out, added
	case map[string]any:
		if d, ok := cp.inline(v); ok {
			return d, true
		}
		out, added := make(map[string]any, len(v)), false
		for k, e := range v {
			var a bool
			out[k], a = cp.adds(e)
			// A content item's type and MIME type say nothing new
			// when its data is a copy.
			added = added || (a && k != "type" && k != "mimeType")
		}
		return out, added
	}
	return v, true
}

// inline describes a content item holding binary data the content did
// not carry: it is never inlined either.
func (cp copies) inline(m map[string]any) (string, bool) {
	kind, _ := m["type"].(string)
	mime, _ := m["mimeType"].(string)
	data, _ := m["data"].(string)
	if rc, ok := m["resource"].(map[string]any); ok && kind == "resource" {
		data, _ = rc["blob"].(string)
		mime, _ = rc["mimeType"].(string)
	}
	if data == "" || cp.blobs[data] != "" || (kind != "image" && kind != "audio" && kind != "resource") {
		return "", false
	}
	n := base64.StdEncoding.DecodedLen(len(data))
	if b, err := base64.StdEncoding.DecodeString(data); err == nil {
		n = len(b)
	}
	return binary(kind, mime, n), true
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

// normal is v as encoding/json decodes it (maps, slices, float64s), and
// whether there is one.
func normal(v any) (any, bool) {
	if v == nil {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	if json.Unmarshal(b, &out) != nil || out == nil {
		return nil, false
	}
	return out, true
}

// repeated reports whether one of texts is JSON equal to want (a
// normal value).
func repeated(texts []string, want any) bool {
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
