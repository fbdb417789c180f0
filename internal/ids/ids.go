// Package ids generates the runtime's unique ids: a random 64-bit prefix
// drawn once per process from crypto/rand, and a 64-bit counter. Ids are
// unique within the process and, with 60 random bits per process, collide
// across processes with negligible probability; they carry the RFC 4122
// version 4 and variant bits, so they are valid random-looking UUIDs. One id
// costs one atomic add instead of a crypto/rand read.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"

	"github.com/google/uuid"
)

var (
	prefix  [8]byte
	counter atomic.Uint64
)

func init() {
	if _, err := rand.Read(prefix[:]); err != nil {
		panic("ids: cannot seed the id generator: " + err.Error())
	}
	prefix[6] = (prefix[6] & 0x0f) | 0x40 // version 4
	var c [8]byte
	if _, err := rand.Read(c[:]); err != nil {
		panic("ids: cannot seed the id generator: " + err.Error())
	}
	counter.Store(binary.BigEndian.Uint64(c[:]) >> 4)
}

// New returns a fresh unique id.
func New() uuid.UUID { return At(counter.Add(1)) }

// Block reserves n consecutive ids and returns the first counter value;
// pass values first..first+n-1 to At. It lets a single goroutine draw ids
// without touching the shared counter on every message.
func Block(n uint64) uint64 { return counter.Add(n) - n + 1 }

// At returns the id for a counter value obtained from Block.
func At(n uint64) uuid.UUID {
	var u uuid.UUID
	copy(u[:8], prefix[:])
	binary.BigEndian.PutUint64(u[8:], n)
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u
}
