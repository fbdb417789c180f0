package search

import (
	"net/netip"
	"testing"
	"time"
)

// Every class of address web_fetch refuses, and some public ones.
func TestClassify(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "127.9.9.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private", "fc00::1": "private", "fd12::1": "private",
		"100.64.0.1": "private", "64:ff9b::a00:1": "private", "2002:c0a8:101::1": "private",
		"169.254.1.1": "link-local", "fe80::1": "link-local",
		"0.0.0.0": "unspecified", "::": "unspecified", "0.1.2.3": "unspecified",
		"224.0.0.1": "multicast", "ff02::1": "multicast", "255.255.255.255": "multicast",
		"240.0.0.1": "reserved", "198.18.0.1": "reserved",
		"169.254.169.254": "cloud metadata", "fd00:ec2::254": "cloud metadata", "100.100.100.200": "cloud metadata",
		"::ffff:169.254.169.254": "cloud metadata",
		"93.184.216.34":          "", "8.8.8.8": "", "2606:4700::1111": "", "64:ff9b::808:808": "",
	} {
		if got := classify(netip.MustParseAddr(addr)); got != want {
			t.Errorf("classify(%s) = %q, want %q", addr, got, want)
		}
	}
}

// Retry-After: seconds, an HTTP date against the clock, or nothing usable.
func TestRetryAfter(t *testing.T) {
	now := fixedNow()
	for v, want := range map[string]string{
		"": "0s", "3": "3s", "0": "0s", "-4": "0s", "soon": "0s",
		"Sun, 01 Jun 2025 12:01:30 GMT": "1m30s", "Sun, 01 Jun 2025 11:00:00 GMT": "0s",
	} {
		if got := retryAfter(v, now).String(); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func fixedNow() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }
