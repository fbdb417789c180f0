package message

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestStopInFindsEveryStopByte: the eight-bytes-at-a-time test of a
// string's plain run finds a quote, a backslash or a control character
// at any of the eight places, and nothing in a word of other bytes.
func TestStopInFindsEveryStopByte(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			if got := stopIn(binary.LittleEndian.Uint64(w)); got != strStop[c] {
				t.Fatalf("byte %#x at %d: stopIn %v; want %v", c, pos, got, strStop[c])
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		x := r.Uint64()
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], x)
		want := false
		for _, c := range w {
			want = want || strStop[c]
		}
		if got := stopIn(x); got != want {
			t.Fatalf("word % x: stopIn %v; want %v", w, got, want)
		}
	}
}
