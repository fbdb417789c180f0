package message

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"

	"github.com/google/uuid"
)

// The id generator: a random 64-bit prefix drawn once per process from
// crypto/rand, and a 64-bit counter. Ids are unique within the process and,
// with 60 random bits per process, collide across processes with negligible
// probability; they carry the RFC 4122 version 4 and variant bits, so they
// are valid random-looking UUIDs. One id costs one atomic add instead of a
// crypto/rand read.
var (
	idPrefix  [8]byte
	idCounter atomic.Uint64
)

func init() {
	if _, err := rand.Read(idPrefix[:]); err != nil {
		panic("message: cannot seed id generator: " + err.Error())
	}
	idPrefix[6] = (idPrefix[6] & 0x0f) | 0x40 // version 4
	var c [8]byte
	if _, err := rand.Read(c[:]); err != nil {
		panic("message: cannot seed id generator: " + err.Error())
	}
	idCounter.Store(binary.BigEndian.Uint64(c[:]) >> 4)
}

// NewID returns a fresh unique id for a message, an agent or a team.
func NewID() uuid.UUID {
	return idFrom(idCounter.Add(1))
}

// IDBlock reserves n consecutive ids and returns the first counter value;
// pass values first..first+n-1 to IDAt. It lets a single goroutine draw ids
// without touching the shared counter on every message.
func IDBlock(n uint64) uint64 {
	return idCounter.Add(n) - n + 1
}

// IDAt returns the id for a counter value obtained from IDBlock.
func IDAt(counter uint64) uuid.UUID { return idFrom(counter) }

func idFrom(n uint64) uuid.UUID {
	var u uuid.UUID
	copy(u[:8], idPrefix[:])
	binary.BigEndian.PutUint64(u[8:], n)
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u
}
