package search

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExtract(t *testing.T) {
	for _, c := range []struct{ name, html, title, text string }{
		{
			name: "document",
			html: `<!DOCTYPE html><html><head><title> The  Page </title>
				<style>body { color: red }</style><script>var x = "<p>not text</p>";</script></head>
				<body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
				<h1>Main   title</h1><p>First <b>bold</b> paragraph,
				with a <a href="https://x">link</a>.</p>
				<ul><li>one</li><li>two <ol><li>a</li><li>b</li></ol></li></ul>
				<!-- a comment <p>hidden</p> -->
				<h2>Second</h2><p>Fish &amp; chips &lt;3 &eacute;t&#233;</p>
				<footer>© 2025 Noise</footer></body></html>`,
			title: "The Page",
			text: "# Main title\n\nFirst bold paragraph, with a link.\n\n- one\n- two\n  1. a\n  2. b\n\n" +
				"## Second\n\nFish & chips <3 été",
		},
		{name: "pre", html: "<p>x</p><pre>a  b\n  c</pre><p>y</p>", text: "x\n\na  b\n  c\n\ny"},
		{name: "br and table", html: "a<br>b<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>", text: "a\nb\n\n1 2\n3"},
		{name: "unclosed skip", html: "<p>kept</p><script>never closed <p>x</p>", text: "kept"},
		{name: "nested skip", html: "<nav><nav>a</nav>b</nav>c", text: "c"},
		{name: "stray less-than", html: "1 < 2 and <3", text: "1 < 2 and <3"},
		{name: "quoted >", html: `<a title="a>b">link</a>`, text: "link"},
		{name: "uppercase", html: "<SCRIPT>x</SCRIPT><P>y</P>", text: "y"},
		{name: "svg", html: "<p>a<svg><text>no</text></svg>b</p>", text: "ab"},
		{name: "plain", html: "just text", text: "just text"},
		{name: "unclosed tag", html: "text <p", text: "text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			title, text := extract([]byte(c.html), 1000)
			if title != c.title || text != c.text {
				t.Errorf("extract:\ntitle %q\ntext  %q\nwant  %q\n      %q", title, text, c.title, c.text)
			}
		})
	}
}

// The text is cut at the limit, on a character boundary, and says so.
func TestExtractTruncates(t *testing.T) {
	page := "<p>" + strings.Repeat("héllo wörld ", 100) + "</p>"
	_, text := extract([]byte(page), 101)
	body, marker, ok := strings.Cut(text, "\n[truncated at 101 bytes]")
	if !ok || marker != "" {
		t.Fatalf("no truncation line at the end: %q", text)
	}
	if len(body) > 101 || !utf8.ValidString(body) {
		t.Fatalf("body of %d bytes (valid %v): %q", len(body), utf8.ValidString(body), body)
	}
	if _, text := extract([]byte("<p>short</p>"), 101); strings.Contains(text, "truncated") {
		t.Fatalf("short page marked truncated: %q", text)
	}
}

// FuzzExtract: the extractor never panics, and its output is valid UTF-8
// bounded by the limit (plus the truncation line); titles are bounded too.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		"<html><head><title>t</title></head><body><p>x</p></body></html>",
		"<script>a</script", "<!--", "<!doctype", "</", "<a b='>'>", "<pre>\r\n</pre>",
		"<ul><li>a<ol><li>b</ul>", "&amp;&#xD800;&#0;", "\xff\xfe<p>\x80</p>", "<title>" + strings.Repeat("x", 400),
	} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = limit&0xfff + 1
		title, text := extract(data, limit)
		if len(title) > maxTitle || !utf8.ValidString(title) {
			t.Fatalf("title of %d bytes, valid %v", len(title), utf8.ValidString(title))
		}
		if !utf8.ValidString(text) {
			t.Fatalf("invalid UTF-8 text %q", text)
		}
		if max := limit + len("\n[truncated at 4096 bytes]"); len(text) > max {
			t.Fatalf("text of %d bytes, limit %d", len(text), limit)
		}
	})
}
