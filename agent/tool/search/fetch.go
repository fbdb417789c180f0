package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Limits of web_fetch.
const (
	// defaultMaxText is the default cap on the text web_fetch returns.
	defaultMaxText = 32 << 10
	// maxBody is the most of a page web_fetch downloads.
	maxBody = 4 << 20
	// maxRedirects is the most redirects web_fetch follows.
	maxRedirects = 5
	// fetchTimeout bounds one fetch, redirects included.
	fetchTimeout = 30 * time.Second
)

// errBlocked marks a fetch refused because of the address it would reach.
var errBlocked = errors.New("address not allowed")

// blockedError is a refused address: which one, and of what kind.
type blockedError struct {
	host   string // as the URL names it
	addr   string // the address it resolved to, "" when refused by name
	reason string // "loopback", "private", ...
}

func (e *blockedError) Error() string {
	article := "a"
	if e.reason == "unspecified" {
		article = "an"
	}
	if e.addr == "" || e.addr == e.host {
		return fmt.Sprintf("%s is %s %s address", e.host, article, e.reason)
	}
	return fmt.Sprintf("%s resolves to %s, %s %s address", e.host, e.addr, article, e.reason)
}

func (e *blockedError) Unwrap() error { return errBlocked }

// Addresses of cloud metadata services: refused even when private
// addresses are allowed.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, ...
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
}

// metadataNames are host names of cloud metadata services.
var metadataNames = map[string]bool{"metadata.google.internal": true, "metadata": true, "instance-data": true}

var (
	cgnat = netip.MustParsePrefix("100.64.0.0/10")  // shared address space (RFC 6598)
	this  = netip.MustParsePrefix("0.0.0.0/8")      // "this network"
	nat64 = netip.MustParsePrefix("64:ff9b::/96")   // NAT64: an IPv4 address inside
	six4  = netip.MustParsePrefix("2002::/16")      // 6to4: an IPv4 address inside
	bcast = netip.MustParseAddr("255.255.255.255")  // limited broadcast
	rsvd  = netip.MustParsePrefix("240.0.0.0/4")    // reserved
	bench = netip.MustParsePrefix("198.18.0.0/15")  // benchmarking (RFC 2544)
	ietf  = netip.MustParsePrefix("192.0.0.0/24")   // IETF protocol assignments
	site  = netip.MustParsePrefix("fec0::/10")      // deprecated site-local
	mdNet = netip.MustParsePrefix("169.254.0.0/16") // link-local (metadata lives here)
)

// classify returns what kind of non-public address a is ("loopback",
// "private", "link-local", "unspecified", "multicast", "reserved",
// "cloud metadata"), or "" for a public one.
func classify(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() && (nat64.Contains(a) || six4.Contains(a)) {
		// Judge the IPv4 address a translation prefix carries.
		b := a.As16()
		var v4 [4]byte
		if nat64.Contains(a) {
			copy(v4[:], b[12:])
		} else {
			copy(v4[:], b[2:6])
		}
		if r := classify(netip.AddrFrom4(v4)); r != "" {
			return r
		}
	}
	switch {
	case metadataAddrs[a]:
		return "cloud metadata"
	case a.IsUnspecified() || this.Contains(a):
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate() || cgnat.Contains(a) || site.Contains(a):
		return "private"
	case a.IsLinkLocalUnicast() || mdNet.Contains(a):
		return "link-local"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a == bcast:
		return "multicast"
	case rsvd.Contains(a) || bench.Contains(a) || ietf.Contains(a):
		return "reserved"
	}
	return ""
}

// fetcher is web_fetch: an HTTP client that refuses non-public addresses
// (unless allowed) when it dials, after DNS resolution, so a redirect or a
// name that resolves differently the second time (DNS rebinding) cannot
// reach them either.
type fetcher struct {
	client       *http.Client
	allowPrivate bool
	public       func(netip.Addr) bool // test hook: addresses taken as public
	maxText      int
}

func newFetcher(allowPrivate bool, maxText int, public func(netip.Addr) bool) *fetcher {
	f := &fetcher{allowPrivate: allowPrivate, public: public, maxText: maxText}
	if f.maxText <= 0 {
		f.maxText = defaultMaxText
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: f.control}
	transport := &http.Transport{
		// No proxy: the guard must see the address of the page, not of a
		// proxy. No keep-alive: an agent fetches a page now and then, and
		// no connection outlives its fetch.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		DisableKeepAlives:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 20 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	f.client = &http.Client{Transport: transport, Timeout: fetchTimeout, CheckRedirect: f.checkRedirect}
	return f
}

// check refuses an address that is not public, unless allowed.
func (f *fetcher) check(host string, a netip.Addr) error {
	if f.public != nil && f.public(a.Unmap()) {
		return nil
	}
	r := classify(a)
	if r == "" || f.allowPrivate && r != "cloud metadata" {
		return nil
	}
	return &blockedError{host: host, addr: a.Unmap().String(), reason: r}
}

// control runs on every connection the client dials, with the address
// actually dialed.
func (f *fetcher) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("dialing %q: not an IP address", address)
	}
	return f.check(host, a)
}

// checkURL refuses what can be refused before dialing: a scheme other
// than http and https, a missing host, a metadata host name, a literal
// address that is not public. Other names (localhost included) are judged
// by the addresses they resolve to, when dialed.
func (f *fetcher) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q (only http and https)", errScheme, u.Scheme)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return fmt.Errorf("%w: no host in %q", errScheme, u.Redacted())
	}
	if metadataNames[host] {
		return &blockedError{host: host, reason: "cloud metadata"}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return f.check(host, a)
	}
	return nil
}

// errScheme marks a URL that is not an http(s) URL with a host.
var errScheme = errors.New("not a web URL")

func (f *fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("%w: more than %d redirects", errRedirects, maxRedirects)
	}
	if err := f.checkURL(req.URL); err != nil {
		return fmt.Errorf("redirected to %s: %w", req.URL.Redacted(), err)
	}
	return nil
}

var errRedirects = errors.New("too many redirects")

// fetch returns the page at raw as the text web_fetch answers. A page
// that cannot be fetched (a refused address, an HTTP error, binary
// content) is a *toolError; only the end of ctx is returned as is.
func (f *fetcher) fetch(ctx context.Context, raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fetchErr("%q is not a URL: %v", raw, err)
	}
	if err := f.checkURL(u); err != nil {
		return "", fetchErr("refused %s: %v", u.Redacted(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fetchErr("%s: %v", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", "akgentic-go web_fetch (+https://github.com/akgentic/akgentic-go)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		var b *blockedError
		if errors.As(err, &b) {
			return "", fetchErr("refused %s: %v (only public addresses may be fetched)", u.Redacted(), unwrapURL(err))
		}
		return "", fetchErr("%s: %v", u.Redacted(), unwrapURL(err))
	}
	defer resp.Body.Close()
	final := resp.Request.URL.Redacted()
	if resp.StatusCode/100 != 2 {
		return "", fetchErr("%s answered HTTP %d %s", final, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fetchErr("%s: reading the page: %v", final, err)
	}
	cut := len(body) > maxBody
	if cut {
		body = body[:maxBody]
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(body)
	}
	media, params, _ := mime.ParseMediaType(ctype)
	var title, text string
	switch {
	case media == "text/html" || media == "application/xhtml+xml":
		title, text = extract(decode(body, params["charset"]), f.maxText)
	case textual(media):
		b := decode(body, params["charset"])
		if bytes.IndexByte(b, 0) >= 0 {
			return "", fetchErr("%s is %s but holds binary data (%s), not readable text", final, media, size(resp, len(body), cut))
		}
		w := &textWriter{limit: f.maxText}
		w.add(strings.ToValidUTF8(string(b), "\uFFFD"))
		text = w.String()
	default:
		return "", fetchErr("%s is %s (%s), not a text page: web_fetch returns only HTML and text", final, media, size(resp, len(body), cut))
	}
	if cut && !strings.HasSuffix(text, " bytes]") {
		text += fmt.Sprintf("\n[truncated at %d bytes of the page]", maxBody)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "URL: %s\n", final)
	if title != "" {
		fmt.Fprintf(&out, "Title: %s\n", title)
	}
	out.WriteString("\n")
	if strings.TrimSpace(text) == "" {
		out.WriteString("(no readable text)")
	} else {
		out.WriteString(text)
	}
	return out.String(), nil
}

// toolError is a tool failure the model can act on (a refused or
// unreadable page, an empty query): the tools return it as an
// *llm.RetryError.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func fetchErr(format string, args ...any) error {
	return &toolError{msg: "web_fetch: " + fmt.Sprintf(format, args...)}
}

// unwrapURL drops the "Get "url": " prefix of a client error: the message
// names the URL already.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// textual reports whether a media type is text web_fetch returns as is.
func textual(media string) bool {
	switch media {
	case "application/json", "application/xml", "application/javascript", "application/x-ndjson",
		"application/yaml", "application/x-yaml", "application/toml", "application/ld+json", "application/rss+xml",
		"application/atom+xml":
		return true
	}
	return strings.HasPrefix(media, "text/")
}

// size describes the size of a refused body.
func size(resp *http.Response, read int, cut bool) string {
	if resp.ContentLength > 0 {
		return fmt.Sprintf("%d bytes", resp.ContentLength)
	}
	if cut {
		return fmt.Sprintf("more than %d bytes", maxBody)
	}
	return fmt.Sprintf("%d bytes", read)
}

// decode returns body as UTF-8: Latin-1 and Windows-1252 pages are
// converted (their 0x80-0x9F range read as Latin-1); any other charset is
// taken as UTF-8.
func decode(body []byte, charset string) []byte {
	switch strings.ToLower(strings.TrimSpace(charset)) {
	case "iso-8859-1", "latin1", "latin-1", "windows-1252", "cp1252", "us-ascii", "ascii":
		out := make([]rune, len(body))
		for i, c := range body {
			out[i] = rune(c)
		}
		return []byte(string(out))
	}
	return body
}
