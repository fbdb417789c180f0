package search

import (
	"bytes"
	"fmt"
	"html"
	"strings"
	"unicode/utf8"
)

// The HTML-to-text extractor is a small tokenizer rather than
// golang.org/x/net/html: readable text needs only the stream of tags and
// text (which elements to drop, where blocks break), not the tree the
// HTML5 algorithm rebuilds, and a tokenizer of our own keeps go.mod as it is.
// It is fuzzed (FuzzExtract): it never panics and its output is bounded by
// the limit it is given.

// skipped are the elements whose whole content is dropped: code, styling,
// embedded objects and navigation noise.
var skipped = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true, "math": true,
	"nav": true, "aside": true, "footer": true, "iframe": true, "object": true, "embed": true,
	"canvas": true, "select": true, "button": true,
	"noembed": true, "noframes": true, "xmp": true, "textarea": true,
}

// rawText are the elements whose content is not markup: everything up to
// their end tag is text (or dropped).
var rawText = map[string]bool{
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
	"iframe": true, "noembed": true, "noframes": true, "noscript": true,
}

// void elements have no end tag.
var void = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// blocks are the elements that start and end on a line of their own.
var blocks = map[string]bool{
	"p": true, "div": true, "section": true, "article": true, "main": true, "header": true,
	"ul": true, "ol": true, "dl": true, "dt": true, "dd": true, "table": true, "tr": true,
	"blockquote": true, "pre": true, "figure": true, "figcaption": true, "address": true,
	"details": true, "summary": true, "hr": true, "br": true, "li": true, "caption": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "body": true, "html": true,
	"tbody": true, "thead": true, "tfoot": true, "fieldset": true, "legend": true, "center": true,
}

// extract returns the title and the readable text of an HTML document:
// headings as "#"-prefixed lines, list items as "- " lines, paragraphs
// separated by blank lines, whitespace collapsed (kept inside pre), the
// text of links kept. The text holds at most limit bytes followed, when
// more was there, by a line "[truncated at <limit> bytes]".
func extract(src []byte, limit int) (title, text string) {
	w := &textWriter{limit: limit}
	src = bytes.ToValidUTF8(src, []byte("\uFFFD"))
	var skip []string // the open skipped elements, innermost last
	pre := 0
	for i := 0; i < len(src) && !w.full(); {
		if src[i] != '<' {
			j := bytes.IndexByte(src[i:], '<')
			if j < 0 {
				j = len(src) - i
			}
			if len(skip) == 0 {
				w.text(html.UnescapeString(string(src[i:i+j])), pre > 0)
			}
			i += j
			continue
		}
		t, n := readTag(src[i:])
		if n == 0 { // a "<" that starts no tag is text
			if len(skip) == 0 {
				w.text("<", pre > 0)
			}
			i++
			continue
		}
		i += n
		switch {
		case t.name == "":
			// A comment, doctype or processing instruction.
		case t.end:
			if len(skip) > 0 {
				// Close the innermost open skipped element of that name
				// (and what is left open inside it).
				for k := len(skip) - 1; k >= 0; k-- {
					if skip[k] == t.name {
						skip = skip[:k]
						break
					}
				}
				continue
			}
			if t.name == "pre" && pre > 0 {
				pre--
			}
			w.close(t.name)
		case rawText[t.name] && !t.selfClosing:
			body, m := rawBody(src[i:], t.name)
			i += m
			if t.name == "title" && title == "" {
				title = collapse(html.UnescapeString(string(body)), maxTitle)
			} else if !skipped[t.name] && len(skip) == 0 {
				w.text(html.UnescapeString(string(body)), pre > 0)
			}
		case len(skip) > 0:
			if skipped[t.name] && !t.selfClosing && !void[t.name] && t.name == skip[len(skip)-1] {
				skip = append(skip, t.name) // the same element nested in itself
			}
		case skipped[t.name]:
			if !t.selfClosing && !void[t.name] {
				skip = append(skip, t.name)
			}
		default:
			if t.name == "pre" {
				pre++
			}
			w.open(t.name)
		}
	}
	return title, w.String()
}

// maxTitle bounds the title extract returns.
const maxTitle = 300

// tag is one parsed tag: its lower-case name ("" for a comment, doctype or
// processing instruction).
type tag struct {
	name        string
	end         bool
	selfClosing bool
}

// readTag reads the markup at the start of s (which starts with "<") and
// returns it with its length, or a length of 0 when s starts no markup.
func readTag(s []byte) (tag, int) {
	if len(s) < 2 {
		return tag{}, 0
	}
	switch {
	case bytes.HasPrefix(s, []byte("<!--")):
		if end := bytes.Index(s[4:], []byte("-->")); end >= 0 {
			return tag{}, 4 + end + 3
		}
		return tag{}, len(s)
	case s[1] == '!' || s[1] == '?':
		if end := bytes.IndexByte(s, '>'); end >= 0 {
			return tag{}, end + 1
		}
		return tag{}, len(s)
	}
	t := tag{}
	i := 1
	if s[1] == '/' {
		t.end = true
		i = 2
	}
	if i >= len(s) || !isLetter(s[i]) {
		return tag{}, 0
	}
	start := i
	for i < len(s) && !isSpace(s[i]) && s[i] != '/' && s[i] != '>' {
		i++
	}
	t.name = strings.ToLower(string(s[start:i]))
	// Attributes: skip to the closing ">", minding quoted values.
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			t.selfClosing = s[i-1] == '/'
			return t, i + 1
		}
	}
	return t, len(s) // an unclosed tag runs to the end
}

// rawBody returns the content of a raw-text element up to its end tag
// (case-insensitive) and the length consumed, end tag included.
func rawBody(s []byte, name string) ([]byte, int) {
	for i := 0; i < len(s); {
		j := bytes.Index(s[i:], []byte("</"))
		if j < 0 {
			break
		}
		k := i + j + 2
		if k+len(name) <= len(s) && strings.EqualFold(string(s[k:k+len(name)]), name) &&
			(k+len(name) == len(s) || !isNameByte(s[k+len(name)])) {
			end := bytes.IndexByte(s[k:], '>')
			if end < 0 {
				return s[:i+j], len(s)
			}
			return s[:i+j], k + end + 1
		}
		i = k
	}
	return s, len(s)
}

func isLetter(c byte) bool   { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isSpace(c byte) bool    { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
func isNameByte(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '-' }

// collapse returns s with its whitespace runs made single spaces, trimmed,
// and cut to at most max bytes.
func collapse(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = cutUTF8(s, max)
	}
	return s
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// textWriter builds the extracted text: blocks on lines of their own, at
// most one blank line in a row, whitespace collapsed outside pre, at most
// limit bytes.
type textWriter struct {
	b         strings.Builder
	limit     int
	truncated bool
	breaks    int  // line breaks owed before the next text (0, 1 or 2)
	space     bool // a space owed before the next text
	list      []string
	itemCount []int
}

func (w *textWriter) full() bool { return w.truncated }

// open handles a start tag.
func (w *textWriter) open(name string) {
	switch name {
	case "br":
		w.lineBreak(1)
	case "hr", "p", "blockquote", "pre", "table", "figure", "details":
		w.lineBreak(2)
	case "ul", "ol":
		w.lineBreak(2 - min(len(w.list), 1)) // a nested list is part of its item
		w.list = append(w.list, name)
		w.itemCount = append(w.itemCount, 0)
	case "li":
		w.lineBreak(1)
		prefix := "- "
		if n := len(w.list); n > 0 {
			w.itemCount[n-1]++
			if w.list[n-1] == "ol" {
				prefix = fmt.Sprintf("%d. ", w.itemCount[n-1])
			}
			prefix = strings.Repeat("  ", n-1) + prefix
		}
		w.write(prefix)
	case "h1", "h2", "h3", "h4", "h5", "h6":
		w.lineBreak(2)
		w.write(strings.Repeat("#", int(name[1]-'0')) + " ")
	case "td", "th":
		w.space = true
	default:
		if blocks[name] {
			w.lineBreak(1)
		}
	}
}

// close handles an end tag.
func (w *textWriter) close(name string) {
	switch name {
	case "ul", "ol":
		if n := len(w.list); n > 0 {
			w.list, w.itemCount = w.list[:n-1], w.itemCount[:n-1]
		}
		w.lineBreak(2 - min(len(w.list), 1))
	case "p", "blockquote", "pre", "table", "figure", "details", "h1", "h2", "h3", "h4", "h5", "h6":
		w.lineBreak(2)
	case "td", "th":
		w.space = true
	default:
		if blocks[name] {
			w.lineBreak(1)
		}
	}
}

func (w *textWriter) lineBreak(n int) {
	if w.b.Len() > 0 && n > w.breaks {
		w.breaks = n
	}
	w.space = false
}

// text adds a run of text, whitespace collapsed unless verbatim.
func (w *textWriter) text(s string, verbatim bool) {
	if verbatim {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		for i, line := range strings.Split(s, "\n") {
			if i > 0 {
				w.pendingLine()
			}
			w.write(line)
		}
		return
	}
	if s == "" {
		return
	}
	lead := isSpace(s[0])
	trail := isSpace(s[len(s)-1])
	words := strings.Fields(s)
	if len(words) == 0 {
		w.space = w.space || lead
		return
	}
	if lead {
		w.space = true
	}
	w.write(strings.Join(words, " "))
	w.space = trail
}

// pendingLine owes one line break even at the start of a line (pre).
func (w *textWriter) pendingLine() {
	if w.breaks == 0 {
		w.flushBreak("\n")
	} else {
		w.breaks++
		if w.breaks > 2 {
			w.breaks = 2
		}
	}
}

// write adds s after the breaks or space owed.
func (w *textWriter) write(s string) {
	if s == "" || w.truncated {
		return
	}
	switch {
	case w.b.Len() == 0:
	case w.breaks > 0:
		w.flushBreak(strings.Repeat("\n", w.breaks))
	case w.space:
		w.flushBreak(" ")
	}
	w.breaks, w.space = 0, false
	w.add(s)
}

func (w *textWriter) flushBreak(s string) {
	w.breaks, w.space = 0, false
	w.add(s)
}

// add appends s within the limit.
func (w *textWriter) add(s string) {
	if w.truncated {
		return
	}
	room := w.limit - w.b.Len()
	if len(s) > room {
		w.b.WriteString(cutUTF8(s, max(room, 0)))
		w.truncated = true
		return
	}
	w.b.WriteString(s)
}

// String returns the text, with the truncation line when it was cut.
func (w *textWriter) String() string {
	s := strings.TrimRight(w.b.String(), " \n")
	if w.truncated {
		s += fmt.Sprintf("\n[truncated at %d bytes]", w.limit)
	}
	return s
}
