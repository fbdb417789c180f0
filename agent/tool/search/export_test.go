package search

import "net/netip"

// TakeAsPublic makes the web_fetch of c take the addresses for which
// public returns true as public: tests serve their "public" pages on a
// loopback address.
func TakeAsPublic(c *Card, public func(netip.Addr) bool) { c.public = public }
