package message

import (
	"encoding/binary"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
)

// The decoder's lexer: whitespace, literals, strings (with their escapes),
// raw values, ids, and the object and field loops decode.go's readers are
// built on. Every function reports failure with ok false; the caller then
// gives up the fast path.

func (d *decoder) ws() {
	for d.i < len(d.d) && isSpace(d.d[d.i]) {
		d.i++
	}
}

// next skips whitespace and consumes c.
func (d *decoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.d) && d.d[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.d) {
		return d.d[d.i]
	}
	return 0
}

// rawString consumes a string and returns its text between the quotes and
// whether it holds an escape. ok is false for a malformed string.
func (d *decoder) rawString() (s []byte, escaped, ok bool) {
	if !d.next('"') {
		return nil, false, false
	}
	b, start, i := d.d, d.i, d.i
	for {
		for i+8 <= len(b) && !stopIn(binary.LittleEndian.Uint64(b[i:])) { // the plain run, eight bytes at a time
			i += 8
		}
		for i < len(b) && !strStop[b[i]] { // then a byte at a time to the stop
			i++
		}
		if i >= len(b) {
			d.i = i
			return nil, false, false
		}
		switch b[i] {
		case '"':
			d.i = i + 1
			return b[start:i], escaped, true
		case '\\':
			escaped = true
			i += 2
		default: // a control character
			d.i = i
			return nil, false, false
		}
	}
}

// stopIn reports whether one of the eight bytes of x ends a plain run (a
// quote, a backslash or a control character; see strStop). Each test is
// exact for the lowest byte it finds, which is all the byte loop after it
// needs.
func stopIn(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v }
	return (zero(x^('"'*ones))|zero(x^('\\'*ones))|(x-0x20*ones)&^x)&highs != 0
}

// strStop marks the bytes that end a plain run of a string's text: the
// closing quote, an escape, and the control characters JSON forbids there.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str consumes a string value and returns it unescaped as encoding/json
// does.
func (d *decoder) str() (string, bool) {
	raw, escaped, ok := d.rawString()
	if !ok {
		return "", false
	}
	if !escaped {
		if !utf8.Valid(raw) {
			return "", false // encoding/json replaces the bad bytes: leave it that work
		}
		return string(raw), true
	}
	return unescape(raw)
}

// unescape decodes the escapes of a JSON string's text. A lone surrogate
// or invalid UTF-8 is left to encoding/json (ok false).
func unescape(s []byte) (string, bool) {
	if !utf8.Valid(s) {
		return "", false
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			out = append(out, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok || utf16.IsSurrogate(r) {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// lit consumes the literal word.
func (d *decoder) lit(word string) bool {
	d.ws()
	if len(d.d)-d.i >= len(word) && string(d.d[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

func (d *decoder) boolean() (v, ok bool) {
	if d.lit("true") {
		return true, true
	}
	return false, d.lit("false")
}

// value consumes any JSON value and returns its text. It checks the
// nesting of brackets and strings only: the caller hands the text to
// encoding/json or to this decoder, which check the rest.
func (d *decoder) value() ([]byte, bool) {
	d.ws()
	start := d.i
	if d.i >= len(d.d) {
		return nil, false
	}
	switch d.d[d.i] {
	case '"':
		_, _, ok := d.rawString()
		return d.d[start:d.i], ok
	case '{', '[':
		depth := 0
		for d.i < len(d.d) {
			switch d.d[d.i] {
			case '"':
				if _, _, ok := d.rawString(); !ok {
					return nil, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					d.i++
					return d.d[start:d.i], true
				}
			}
			d.i++
		}
		return nil, false
	}
	// A number or a literal: up to the next delimiter.
	for d.i < len(d.d) {
		if c := d.d[d.i]; c == ',' || c == '}' || c == ']' || isSpace(c) {
			break
		}
		d.i++
	}
	return d.d[start:d.i], d.i > start
}

// uuidValue consumes a string holding a UUID, as uuid.UUID's UnmarshalText
// reads it.
func (d *decoder) uuidValue() (uuid.UUID, bool) {
	if u, ok := d.canonicalUUID(); ok {
		return u, true
	}
	raw, escaped, ok := d.rawString()
	if !ok || escaped {
		return uuid.Nil, false
	}
	u, err := uuid.ParseBytes(raw)
	return u, err == nil
}

func (d *decoder) nullUUID() (uuid.NullUUID, bool) {
	if d.lit("null") {
		return uuid.NullUUID{}, true
	}
	u, ok := d.uuidValue()
	return uuid.NullUUID{UUID: u, Valid: true}, ok
}

// optionalUUID consumes a string holding a UUID or nothing (uuid.Nil), as
// addressDict.identity reads it.
func (d *decoder) optionalUUID() (uuid.UUID, bool) {
	if u, ok := d.canonicalUUID(); ok {
		return u, true
	}
	raw, escaped, ok := d.rawString()
	if !ok || escaped {
		return uuid.Nil, false
	}
	if len(raw) == 0 {
		return uuid.Nil, true
	}
	u, err := uuid.ParseBytes(raw)
	return u, err == nil
}

// canonicalUUID consumes a string holding a UUID in the form the encoder
// writes (8-4-4-4-12 hex digits, either case); ok is false, and nothing
// consumed, for any other string (the caller reads it with
// uuid.ParseBytes, which takes the other forms too).
func (d *decoder) canonicalUUID() (u uuid.UUID, ok bool) {
	d.ws()
	b := d.d[d.i:]
	if len(b) < 38 || b[0] != '"' || b[37] != '"' || b[9] != '-' || b[14] != '-' || b[19] != '-' || b[24] != '-' {
		return u, false
	}
	for k, x := range uuidDigits {
		hi, lo := hexValue[b[1+x]], hexValue[b[2+x]]
		if hi|lo > 0x0f {
			return uuid.UUID{}, false
		}
		u[k] = hi<<4 | lo
	}
	d.i += 38
	return u, true
}

// uuidDigits are the offsets of a canonical UUID's 16 digit pairs.
var uuidDigits = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexValue is each byte's value as a hex digit, 0xff for a byte that is
// not one.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c], t[c-'a'+'A'] = c-'a'+10, c-'a'+10
	}
	return t
}()

// shortStr is str for the short strings every address repeats (names,
// roles, types): a small shared table hands back the same string for the
// same text instead of allocating one per address.
func (d *decoder) shortStr() (string, bool) {
	d.ws()
	start := d.i
	raw, escaped, ok := d.rawString()
	if !ok || escaped || len(raw) > maxInterned || !utf8.Valid(raw) {
		d.i = start
		return d.str()
	}
	return intern(raw), true
}

// maxInterned bounds the strings the table keeps: 512 slots of at most
// 64 bytes.
const maxInterned = 64

var interned [512]atomic.Pointer[string]

// intern returns string(b), shared with earlier calls for the same text
// when its slot still holds it.
func intern(b []byte) string {
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &interned[h%uint32(len(interned))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

// object consumes an object, calling field for each key with the decoder
// at the key's value; field consumes the value and reports success.
func (d *decoder) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	return d.fields(field)
}

// fields consumes `"key":value` pairs separated by commas, then the
// closing brace.
func (d *decoder) fields(field func(key []byte) bool) bool {
	for {
		key, escaped, ok := d.rawString()
		if !ok || escaped || !d.next(':') || !field(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}
