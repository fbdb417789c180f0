package workspace

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// A font's ToUnicode table (a CMap: which text each character code of the
// font stands for) is read here rather than by the PDF library, whose
// reader trusts the counts a table declares (a table declaring a hundred
// million entries made it allocate gigabytes) and looks each code up in a
// list (a large table times a long text took minutes). This parser reads
// at most maxCMapBytes of the table, keeps at most maxCMapEntries entries
// and finds a code with one map lookup or one binary search.
const (
	// maxCMapBytes bounds the decompressed size of one ToUnicode table.
	// Tables of real fonts, large CJK ones included, are well below it.
	maxCMapBytes = 4 << 20
	// maxCMapEntries bounds the entries (bfchar pairs, bfrange triples and
	// the strings of a range's array) of one table, read or declared.
	maxCMapEntries = 100_000
	// maxCMapString bounds one string of a table (the PDF limit).
	maxCMapString = 512
)

// cmapSpan is a codespace range: the codes of one length from lo to hi.
type cmapSpan struct{ lo, hi string }

// cmapRange maps the codes lo to hi (of one length) to text: either from
// base, whose last UTF-16 unit is incremented by the code's distance from
// lo, or from list, one text per code.
type cmapRange struct {
	lo, hi string
	base   []uint16
	list   []string
}

// toUnicode is a parsed ToUnicode table.
type toUnicode struct {
	space  [4][]cmapSpan     // codespace ranges by code length - 1
	chars  map[string]string // bfchar: a code to its text
	ranges [4][]cmapRange    // bfrange by code length - 1, sorted by lo
}

// refusal is an error that refuses a whole document (a bomb), as opposed
// to a page that cannot be read.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

// parseCMap parses the ToUnicode table data of the font named font. An
// error is a refusal naming the font and the limit passed; what the
// parser does not understand is skipped.
func parseCMap(font string, data []byte) (*toUnicode, error) {
	tooMany := refusal{fmt.Sprintf("its font %s has a ToUnicode table with more than %d entries", font, maxCMapEntries)}
	if len(data) > maxCMapBytes {
		return nil, refusal{fmt.Sprintf("its font %s has a ToUnicode table larger than %d bytes", font, maxCMapBytes)}
	}
	m := &toUnicode{chars: map[string]string{}}
	lx := cmapLexer{data: data}
	var (
		mode    string   // the block being read: "codespacerange", "bfchar", "bfrange" or ""
		ops     []cmapOp // its operands
		arr     []string // the array being read, if inArr
		inArr   bool     //
		entries int      // entries kept so far
		last    string   // the previous keyword, a declared count before a block
		lens    [4]bool  // code lengths seen in entries
	)
	for {
		kind, tok, ok := lx.next()
		if !ok {
			break
		}
		switch {
		case kind == '[':
			inArr, arr = mode == "bfrange", nil
			continue
		case kind == ']':
			if inArr {
				ops = append(ops, cmapOp{list: arr, isList: true})
				inArr = false
			}
			continue
		case kind == 's' && inArr:
			if entries+len(arr) >= maxCMapEntries {
				return nil, tooMany
			}
			arr = append(arr, tok)
			continue
		case kind == 's':
			if mode != "" {
				if entries+len(ops)/3 >= maxCMapEntries {
					return nil, tooMany
				}
				ops = append(ops, cmapOp{str: tok})
			}
			continue
		}
		switch tok {
		case "begincodespacerange", "beginbfchar", "beginbfrange":
			if n, err := strconv.ParseInt(last, 10, 64); err == nil && n > maxCMapEntries {
				return nil, tooMany
			}
			mode, ops = strings.TrimPrefix(tok, "begin"), ops[:0]
		case "endcodespacerange", "endbfchar", "endbfrange":
			if strings.TrimPrefix(tok, "end") != mode {
				mode = ""
				break
			}
			n := m.add(mode, ops, &lens)
			if entries += n; entries > maxCMapEntries {
				return nil, tooMany
			}
			mode = ""
		}
		last = tok
	}
	for i := range m.ranges {
		slices.SortFunc(m.ranges[i], func(a, b cmapRange) int { return strings.Compare(a.lo, b.lo) })
	}
	if m.space[0] == nil && m.space[1] == nil && m.space[2] == nil && m.space[3] == nil { // no codespace: every code of the lengths used
		for i, seen := range lens {
			if seen {
				m.space[i] = []cmapSpan{{strings.Repeat("\x00", i+1), strings.Repeat("\xff", i+1)}}
			}
		}
	}
	return m, nil
}

// cmapOp is an operand of a block: a string or an array of strings.
type cmapOp struct {
	str    string
	list   []string
	isList bool
}

// add adds the entries of a block of the named kind and returns how many
// it holds (counting each string of a range's array).
func (m *toUnicode) add(mode string, ops []cmapOp, lens *[4]bool) int {
	n := 0
	codeOK := func(s string) bool { return len(s) >= 1 && len(s) <= 4 }
	switch mode {
	case "codespacerange":
		for i := 0; i+1 < len(ops); i += 2 {
			lo, hi := ops[i].str, ops[i+1].str
			if codeOK(lo) && len(lo) == len(hi) {
				m.space[len(lo)-1] = append(m.space[len(lo)-1], cmapSpan{lo, hi})
				n++
			}
		}
	case "bfchar":
		for i := 0; i+1 < len(ops); i += 2 {
			if src := ops[i].str; codeOK(src) && !ops[i+1].isList {
				m.chars[src] = utf16Text(ops[i+1].str)
				lens[len(src)-1] = true
				n++
			}
		}
	case "bfrange":
		for i := 0; i+2 < len(ops); i += 3 {
			lo, hi, dst := ops[i].str, ops[i+1].str, ops[i+2]
			if !codeOK(lo) || len(lo) != len(hi) || lo > hi {
				continue
			}
			r := cmapRange{lo: lo, hi: hi}
			if dst.isList {
				for _, s := range dst.list {
					r.list = append(r.list, utf16Text(s))
				}
				n += len(dst.list)
			} else {
				r.base = utf16Units(dst.str)
			}
			m.ranges[len(lo)-1] = append(m.ranges[len(lo)-1], r)
			lens[len(lo)-1] = true
			n++
		}
	}
	return n
}

// decode appends the text of the codes in raw to b, until b is full.
func (m *toUnicode) decode(b *capped, raw string) {
	for len(raw) > 0 && !b.full {
		n := m.codeLen(raw)
		if n == 0 { // in no codespace: one byte is skipped
			b.text(string(noRune))
			raw = raw[1:]
			continue
		}
		b.text(m.lookup(raw[:n]))
		raw = raw[n:]
	}
}

// noRune stands for a code the table does not map.
const noRune = '\ufffd'

// codeLen returns the length of the code raw starts with, 0 if none.
func (m *toUnicode) codeLen(raw string) int {
	for n := 1; n <= 4 && n <= len(raw); n++ {
		for _, s := range m.space[n-1] {
			if s.lo <= raw[:n] && raw[:n] <= s.hi {
				return n
			}
		}
	}
	return 0
}

// lookup returns the text of code.
func (m *toUnicode) lookup(code string) string {
	if s, ok := m.chars[code]; ok {
		return s
	}
	rs := m.ranges[len(code)-1]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].lo > code }) - 1
	if i < 0 || code > rs[i].hi {
		return string(noRune)
	}
	r := rs[i]
	off := codeValue(code) - codeValue(r.lo)
	switch {
	case r.list != nil:
		if off < uint32(len(r.list)) {
			return r.list[off]
		}
	case len(r.base) > 0:
		u := slices.Clone(r.base)
		u[len(u)-1] += uint16(off)
		return string(utf16.Decode(u))
	}
	return string(noRune)
}

// codeValue is a code of at most 4 bytes as a big-endian number.
func codeValue(code string) uint32 {
	var v uint32
	for i := range len(code) {
		v = v<<8 | uint32(code[i])
	}
	return v
}

// utf16Units returns the UTF-16BE units of s (an odd last byte dropped).
func utf16Units(s string) []uint16 {
	u := make([]uint16, len(s)/2)
	for i := range u {
		u[i] = uint16(s[2*i])<<8 | uint16(s[2*i+1])
	}
	return u
}

// utf16Text returns the UTF-16BE text s as UTF-8.
func utf16Text(s string) string { return string(utf16.Decode(utf16Units(s))) }

// cmapLexer splits a CMap into tokens: strings ('s', hex or literal, their
// bytes), '[' and ']', and the rest ('k': keywords, numbers, names and
// dictionary brackets, as written).
type cmapLexer struct {
	data []byte
	pos  int
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == 0
}

func isDelim(c byte) bool { return strings.IndexByte("()<>[]{}/%", c) >= 0 }

// next returns the next token, ok false at the end.
func (l *cmapLexer) next() (kind byte, tok string, ok bool) {
	d := l.data
	for l.pos < len(d) {
		c := d[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case c == '%':
			for l.pos < len(d) && d[l.pos] != '\n' && d[l.pos] != '\r' {
				l.pos++
			}
		case c == '[' || c == ']':
			l.pos++
			return c, "", true
		case c == '<' && l.pos+1 < len(d) && d[l.pos+1] == '<', c == '>' && l.pos+1 < len(d) && d[l.pos+1] == '>':
			l.pos += 2
			return 'k', string(d[l.pos-2 : l.pos]), true
		case c == '<':
			return 's', l.hex(), true
		case c == '(':
			return 's', l.literal(), true
		case c == '/' || !isDelim(c):
			start := l.pos
			for l.pos++; l.pos < len(d) && !isSpace(d[l.pos]) && !isDelim(d[l.pos]); l.pos++ {
			}
			return 'k', string(d[start:l.pos]), true
		default: // a stray ')', '>', '{' or '}'
			l.pos++
		}
	}
	return 0, "", false
}

// hex reads a hex string (at '<'); an odd last digit is followed by 0.
func (l *cmapLexer) hex() string {
	var b []byte
	digits, half := 0, byte(0)
	for l.pos++; l.pos < len(l.data) && l.data[l.pos] != '>'; l.pos++ {
		v, ok := hexValue(l.data[l.pos])
		if !ok || len(b) >= maxCMapString {
			continue
		}
		if digits++; digits%2 == 1 {
			half = v << 4
		} else {
			b = append(b, half|v)
		}
	}
	if digits%2 == 1 && len(b) < maxCMapString {
		b = append(b, half)
	}
	l.pos++ // the '>'
	return string(b)
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// literal reads a literal string (at '('), balanced parentheses and
// backslash escapes included.
func (l *cmapLexer) literal() string {
	var b []byte
	depth := 0
	put := func(c byte) {
		if len(b) < maxCMapString {
			b = append(b, c)
		}
	}
	for l.pos++; l.pos < len(l.data); l.pos++ {
		c := l.data[l.pos]
		switch {
		case c == '\\' && l.pos+1 < len(l.data):
			l.pos++
			switch e := l.data[l.pos]; e {
			case 'n':
				put('\n')
			case 'r':
				put('\r')
			case 't':
				put('\t')
			case 'b':
				put('\b')
			case 'f':
				put('\f')
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := 0
				for k := 0; k < 3 && l.pos < len(l.data) && '0' <= l.data[l.pos] && l.data[l.pos] <= '7'; k++ {
					v = v*8 + int(l.data[l.pos]-'0')
					l.pos++
				}
				l.pos--
				put(byte(v))
			case '\n', '\r': // a line continuation
			default:
				put(e)
			}
		case c == '(':
			depth++
			put(c)
		case c == ')':
			if depth == 0 {
				l.pos++
				return string(b)
			}
			depth--
			put(c)
		default:
			put(c)
		}
	}
	return string(b)
}
