package workspace

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// Text extraction for workspace_read. PDF goes through
// github.com/ledongthuc/pdf (BSD-3-Clause, a fork of rsc.io/pdf: one small
// package without dependencies that reads the page tree, fonts and content
// streams); DOCX through archive/zip and encoding/xml.

// extractors maps the document extensions workspace_read extracts text
// from to their extractor. An extractor returns the text of data, at most
// maxText bytes of it, or an error saying (in words for the model) why
// the file cannot be read.
var extractors = map[string]func(data []byte, maxText int64) (string, error){
	".pdf":  pdfText,
	".docx": docxText,
}

// Bounds of an extraction besides the size of its text.
const (
	// maxPageContent bounds the decompressed content of one PDF page; the
	// library keeps every operand of a content stream on a stack, so this
	// also bounds its memory. A larger page is reported, not read.
	maxPageContent = 8 << 20
	// maxPageNodes bounds the nodes of a PDF page tree that are visited,
	// and maxPageDepth its depth, so a looping tree ends.
	maxPageNodes = 100_000
	maxPageDepth = 64
	// maxXMLDepth bounds the nesting of elements in word/document.xml
	// (real documents nest a few dozen levels; the XML decoder keeps every
	// open element, so a deeper one is refused, not read).
	maxXMLDepth = 256
	// maxDifferences bounds a font encoding's Differences array (a code
	// and a glyph name per entry of 256 codes at most: real ones are
	// shorter than 512).
	maxDifferences = 1024
	// maxExtractTime bounds the time one document's text takes to extract.
	maxExtractTime = 10 * time.Second
	// wordNS is the namespace of WordprocessingML elements.
	wordNS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
)

// capped is a text buffer that stops growing at max bytes (cut on a rune
// boundary) and remembers that it did.
type capped struct {
	strings.Builder
	max  int64
	full bool
}

func (c *capped) text(s string) {
	if c.full {
		return
	}
	if room := c.max - int64(c.Len()); int64(len(s)) > room {
		s = s[:room]
		for len(s) > 0 { // drop a rune cut in two
			if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
				break
			}
			s = s[:len(s)-1]
		}
		c.full = true
	}
	c.WriteString(s)
}

// result is the buffered text, with a last line saying where it was cut.
func (c *capped) result() string {
	s := strings.TrimRight(c.String(), " \t\n")
	if c.full {
		s += fmt.Sprintf("\n[... text cut at %d bytes ...]", c.max)
	}
	return s
}

// errFull stops a PDF content interpreter once the text buffer is full.
var errFull = errors.New("text buffer full")

// errSlow refuses a document whose extraction takes longer than
// maxExtractTime.
var errSlow = refusal{fmt.Sprintf("its text takes longer than %v to extract", maxExtractTime)}

// clock tells an extraction when its time is up, looking at the time once
// every 1024 steps.
type clock struct {
	deadline time.Time
	steps    int
}

func newClock() *clock { return &clock{deadline: time.Now().Add(maxExtractTime)} }

// over reports whether the extraction's time is up.
func (c *clock) over() bool {
	c.steps++
	return c.steps%1024 == 0 && time.Now().After(c.deadline)
}

// pdfText returns the text of the PDF data, each page after a line
// "--- page N ---". A page whose content cannot be read becomes a line
// saying so; a file that cannot be opened (not a PDF, broken cross
// reference table, encrypted with a password) is an error.
func pdfText(data []byte, maxText int64) (text string, err error) {
	defer func() { // the library reports malformed input by panicking
		if x := recover(); x != nil {
			text, err = "", fmt.Errorf("it is not a readable PDF: %v", x)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	switch {
	case errors.Is(err, pdf.ErrInvalidPassword):
		return "", errors.New("it is encrypted with a password")
	case err != nil:
		return "", fmt.Errorf("it is not a readable PDF: %v", err)
	}
	var b capped
	b.max = maxText
	budget := 4 * maxText // decompressed content (and font tables) of the whole document
	clk := newClock()
	for i, p := range pdfPages(r.Trailer().Key("Root").Key("Pages")) {
		if b.full {
			break
		}
		if i > 0 {
			b.text("\n")
		}
		b.text(fmt.Sprintf("--- page %d ---\n", i+1))
		err := pageText(&b, p, &budget, clk)
		var refused refusal
		if errors.As(err, &refused) {
			return "", refused
		}
		if err != nil && !errors.Is(err, errFull) {
			b.text(fmt.Sprintf("[page %d: no text extracted: %v]\n", i+1, err))
		}
	}
	if b.Len() == 0 {
		return "", errors.New("it has no pages")
	}
	return b.result(), nil
}

// pdfPages returns the pages of the page tree below node, in order,
// without following the tree past maxPageDepth or maxPageNodes.
func pdfPages(node pdf.Value) []pdf.Page {
	var pages []pdf.Page
	visited := 0
	var walk func(v pdf.Value, depth int)
	walk = func(v pdf.Value, depth int) {
		if visited++; visited > maxPageNodes || depth > maxPageDepth {
			return
		}
		switch v.Key("Type").Name() {
		case "Page":
			pages = append(pages, pdf.Page{V: v})
		case "Pages":
			kids := v.Key("Kids")
			for i := range kids.Len() {
				walk(kids.Index(i), depth+1)
			}
		}
	}
	walk(node, 0)
	return pages
}

// pageText appends the text of page p to b: each text object (BT) and
// each move to a new line (T*, ', ", Td or TD with a vertical move) starts
// a new line, and a wide gap in a TJ array becomes a space. budget is
// what decompressed content may still take; the page's content is
// measured before it is interpreted, its fonts' ToUnicode tables are read
// by parseCMap (counted in budget too). A refusal (a font table too
// large, the time up) refuses the whole document.
func pageText(b *capped, p pdf.Page, budget *int64, clk *clock) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(error); ok && (errors.Is(e, errFull) || errors.Is(e, errSlow)) {
				err = e
				return
			}
			err = fmt.Errorf("%v", x)
		}
	}()
	contents := p.V.Key("Contents")
	if contents.IsNull() {
		return nil
	}
	var size int64
	streams := []pdf.Value{contents}
	if contents.Kind() == pdf.Array {
		streams = streams[:0]
		for i := range contents.Len() {
			streams = append(streams, contents.Index(i))
		}
	}
	for _, s := range streams {
		rc := s.Reader()
		n, err := io.Copy(io.Discard, io.LimitReader(rc, maxPageContent-size+1))
		rc.Close()
		if size += n; err != nil {
			return err
		}
		if size > maxPageContent || size > *budget {
			return fmt.Errorf("its content is larger than %d bytes", min(maxPageContent, *budget))
		}
	}
	*budget -= size

	fonts := map[string]decoder{}
	for _, name := range p.Fonts() {
		dec, err := fontDecoder(name, p.Font(name), budget)
		if err != nil {
			return err
		}
		fonts[name] = dec
	}
	var enc decoder
	show := func(v pdf.Value) {
		if enc == nil {
			b.text(v.RawString())
		} else {
			enc.decode(b, v.RawString())
		}
		if b.full {
			panic(errFull)
		}
	}
	newline := func() {
		if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
			b.text("\n")
		}
	}
	var args []pdf.Value
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		if clk.over() {
			panic(errSlow)
		}
		args = args[:0]
		for n := stk.Len(); n > 0; n-- {
			args = append(args, pdf.Value{})
		}
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		arg := func(i int) pdf.Value { // missing operands read as null
			if i < len(args) {
				return args[i]
			}
			return pdf.Value{}
		}
		switch op {
		case "BT", "T*":
			newline()
		case "Td", "TD":
			if arg(1).Float64() != 0 {
				newline()
			}
		case "Tf":
			enc = fonts[arg(0).Name()]
		case "Tj":
			show(arg(0))
		case "'":
			newline()
			show(arg(0))
		case "\"":
			newline()
			show(arg(2))
		case "TJ":
			a := arg(0)
			for i := range a.Len() {
				switch x := a.Index(i); x.Kind() {
				case pdf.String:
					show(x)
				case pdf.Integer, pdf.Real:
					if x.Float64() < -200 { // thousandths of an em: a word gap
						b.text(" ")
					}
				}
			}
		}
	})
	newline()
	return nil
}

// decoder appends the text of a string shown in a font to a buffer.
type decoder interface{ decode(b *capped, raw string) }

// libDecoder decodes with one of the PDF library's encodings.
type libDecoder struct{ enc pdf.TextEncoding }

func (d libDecoder) decode(b *capped, raw string) { b.text(d.enc.Decode(raw)) }

// fontDecoder returns the decoder of font f, named name on its page. A
// font whose text the library would read from its ToUnicode table (no
// encoding, or Identity-H) is read by parseCMap, at most maxCMapBytes,
// charged to budget; the others use the library's fixed encodings.
func fontDecoder(name string, f pdf.Font, budget *int64) (decoder, error) {
	tu := f.V.Key("ToUnicode")
	enc := f.V.Key("Encoding")
	if enc.Kind() == pdf.Dict { // the library walks its Differences for every byte shown
		if n := enc.Key("Differences").Len(); n > maxDifferences {
			return nil, refusal{fmt.Sprintf("its font %s has an encoding with %d Differences entries, more than %d", name, n, maxDifferences)}
		}
	}
	if tu.Kind() != pdf.Stream || !(enc.IsNull() || enc.Kind() == pdf.Name && enc.Name() == "Identity-H") {
		return libDecoder{f.Encoder()}, nil
	}
	rc := tu.Reader()
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, min(maxCMapBytes, *budget)+1))
	if err != nil {
		return nil, fmt.Errorf("its font %s has a ToUnicode table that cannot be read: %v", name, err)
	}
	if int64(len(data)) > *budget {
		return nil, refusal{fmt.Sprintf("its fonts' ToUnicode tables and content are larger than %d bytes in all", *budget)}
	}
	*budget -= int64(len(data))
	m, err := parseCMap(name, data)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// docxText returns the text of the DOCX data: the body of
// word/document.xml (headers, footers, notes and comments are left out),
// one line per paragraph, with tabs and line breaks kept. A table row is a
// line whose cells are separated by " | ", the paragraphs of a cell joined
// by spaces. word/document.xml may be at most 4*maxText bytes uncompressed:
// its declared size is checked before it is opened, and reading stops
// past the limit whatever the zip header said.
func docxText(data []byte, maxText int64) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("it is not a DOCX (zip) file, maybe an encrypted or old .doc one: %v", err)
	}
	var doc *zip.File
	for _, zf := range zr.File {
		if zf.Name == "word/document.xml" {
			doc = zf
			break
		}
	}
	if doc == nil {
		return "", errors.New("it is not a DOCX file: it has no word/document.xml")
	}
	limit := 4 * maxText
	tooLarge := fmt.Errorf("its word/document.xml is larger than %d bytes uncompressed", limit)
	if doc.UncompressedSize64 > uint64(limit) {
		return "", tooLarge
	}
	rc, err := doc.Open()
	if err != nil {
		return "", fmt.Errorf("cannot open its word/document.xml: %v", err)
	}
	defer rc.Close()
	lr := &io.LimitedReader{R: rc, N: limit + 1}
	b := capped{max: maxText}
	w := wordText{b: &b}
	dec := xml.NewDecoder(lr)
	clk := newClock()
	depth := 0
	for !b.full {
		if clk.over() {
			return "", errSlow
		}
		tok, err := dec.Token()
		if lr.N <= 0 {
			return "", tooLarge
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("its word/document.xml is malformed: %v", err)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxXMLDepth {
				return "", fmt.Errorf("its word/document.xml nests elements deeper than %d levels", maxXMLDepth)
			}
		case xml.EndElement:
			depth--
		}
		w.token(tok)
	}
	return b.result(), nil
}

// wordText turns the tokens of word/document.xml into text.
type wordText struct {
	b       *capped
	runs    int  // depth of w:r elements
	inText  bool // inside w:t
	tables  int  // depth of w:tbl elements
	cells   int  // cells started in the current row
	pending bool // a paragraph ended inside a cell: a space before more text
}

func (w *wordText) write(s string) {
	if w.pending {
		w.pending = false
		w.b.text(" ")
	}
	w.b.text(s)
}

func (w *wordText) token(tok xml.Token) {
	switch t := tok.(type) {
	case xml.StartElement:
		if t.Name.Space != wordNS {
			return
		}
		switch t.Name.Local {
		case "r":
			w.runs++
		case "t":
			w.inText = w.runs > 0
		case "tab":
			if w.runs > 0 { // not a tab stop of the paragraph properties
				w.write("\t")
			}
		case "br", "cr":
			if w.runs > 0 {
				w.write("\n")
			}
		case "noBreakHyphen":
			w.write("-")
		case "tbl":
			w.tables++
		case "tr":
			w.cells = 0
		case "tc":
			if w.cells++; w.cells > 1 {
				w.b.text(" | ")
			}
			w.pending = false
		}
	case xml.EndElement:
		if t.Name.Space != wordNS {
			return
		}
		switch t.Name.Local {
		case "r":
			w.runs = max(0, w.runs-1)
		case "t":
			w.inText = false
		case "p":
			if w.tables > 0 {
				w.pending = true
			} else {
				w.b.text("\n")
			}
		case "tr":
			if w.tables == 1 {
				w.b.text("\n")
				w.pending = false
			}
		case "tbl":
			w.tables = max(0, w.tables-1)
		}
	case xml.CharData:
		if w.inText {
			w.write(string(t))
		}
	}
}
