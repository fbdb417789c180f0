package search_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/search"
)

// tools attaches card (no owner needed: the card never touches it) and
// returns its tools by name.
func tools(t *testing.T, card *search.Card) map[string]*llm.Tool {
	t.Helper()
	caps, err := card.Attach(actortest.Context(t), &tool.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*llm.Tool{}
	for _, tl := range caps.Tools {
		out[tl.Name] = tl
	}
	return out
}

// call calls a tool with its arguments as JSON.
func call(t *testing.T, tl *llm.Tool, args map[string]any) (string, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	v, err := tl.Call(actortest.Context(t), raw)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// retry calls a tool that must fail with a retry error containing each of
// wants.
func retry(t *testing.T, tl *llm.Tool, args map[string]any, wants ...string) {
	t.Helper()
	out, err := call(t, tl, args)
	var re *llm.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("%s(%v) = %q, %v; want a retry error", tl.Name, args, out, err)
	}
	for _, w := range wants {
		if !strings.Contains(re.Message, w) {
			t.Fatalf("%s(%v): %q does not contain %q", tl.Name, args, re.Message, w)
		}
	}
}

// page serves content with content type ctype at / on a loopback server.
func page(t *testing.T, ctype, content string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		fmt.Fprint(w, content)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const article = `<!doctype html><html><head><title>Actors &amp; Go</title><script>track()</script></head>
<body><nav><a href="/">Home</a></nav><article><h1>Actors</h1><p>An actor handles one message at a time.</p>
<ul><li>mailbox</li><li>state</li></ul></article><footer>cookie banner</footer></body></html>`

// An allowed page comes back as readable text with its URL and title.
func TestFetchPage(t *testing.T) {
	srv := page(t, "text/html; charset=utf-8", article)
	out, err := call(t, tools(t, &search.Card{AllowPrivate: true})["web_fetch"], map[string]any{"url": srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	want := "URL: " + srv.URL + "/\nTitle: Actors & Go\n\n# Actors\n\nAn actor handles one message at a time.\n\n- mailbox\n- state"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// Each class of address is refused, before dialing for literal addresses
// and known names, when dialed for names (localhost).
func TestFetchRefusesAddresses(t *testing.T) {
	srv := page(t, "text/plain", "secret")
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	fetch := tools(t, &search.Card{})["web_fetch"]
	for url, want := range map[string]string{
		srv.URL: "127.0.0.1 is a loopback address",
		fmt.Sprintf("http://localhost:%d/", port): "a loopback address",
		"http://[::1]/":                                   "::1 is a loopback address",
		"http://[::ffff:127.0.0.1]/":                      "127.0.0.1, a loopback address",
		"http://10.0.0.1/":                                "10.0.0.1 is a private address",
		"http://172.16.5.4:8080/x":                        "a private address",
		"https://192.168.1.1/":                            "a private address",
		"http://[fd00::1]/":                               "a private address",
		"http://169.254.10.10/":                           "a link-local address",
		"http://[fe80::1]/":                               "a link-local address",
		"http://0.0.0.0/":                                 "an unspecified address",
		"http://224.0.0.1/":                               "a multicast address",
		"http://169.254.169.254/latest/meta-data/":        "a cloud metadata address",
		"http://[fd00:ec2::254]/":                         "a cloud metadata address",
		"http://metadata.google.internal/computeMetadata": "metadata.google.internal is a cloud metadata address",
	} {
		retry(t, fetch, map[string]any{"url": url}, "web_fetch: refused", want)
	}
	for url, want := range map[string]string{
		"file:///etc/passwd":     `scheme "file" (only http and https)`,
		"ftp://example.com/":     `scheme "ftp"`,
		"javascript:alert(1)":    `scheme "javascript"`,
		"example.com/page":       `scheme ""`,
		"http:///nohost":         "no host",
		"http://exa mple.com/%%": "is not a URL",
	} {
		retry(t, fetch, map[string]any{"url": url}, "web_fetch:", want)
	}
}

// publicLoopback starts a server on 127.0.0.2, which the card takes as
// public, so that it stands for a public site.
func publicLoopback(t *testing.T, h http.Handler) *httptest.Server {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func isPublic(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.2") }

// A public page that redirects to a private one is refused on the
// redirect, whether the target is a literal address or a name; redirects
// are capped; a public page is fetched.
func TestFetchRedirects(t *testing.T) {
	private := page(t, "text/plain", "internal secret")
	port := private.Listener.Addr().(*net.TCPAddr).Port
	var self string
	public := publicLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-literal":
			http.Redirect(w, r, private.URL+"/", http.StatusFound)
		case "/to-name":
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/", port), http.StatusMovedPermanently)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, self+"/loop", http.StatusFound)
		case "/hop":
			http.Redirect(w, r, self+"/", http.StatusFound)
		default:
			fmt.Fprint(w, "public page")
		}
	}))
	self = public.URL
	card := &search.Card{}
	search.TakeAsPublic(card, isPublic)
	fetch := tools(t, card)["web_fetch"]
	retry(t, fetch, map[string]any{"url": public.URL + "/to-literal"}, "redirected to "+private.URL, "127.0.0.1 is a loopback address")
	retry(t, fetch, map[string]any{"url": public.URL + "/to-name"}, "web_fetch: refused", "127.0.0.1 is a loopback address")
	retry(t, fetch, map[string]any{"url": public.URL + "/to-metadata"}, "cloud metadata")
	retry(t, fetch, map[string]any{"url": public.URL + "/to-file"}, `scheme "file"`)
	retry(t, fetch, map[string]any{"url": public.URL + "/loop"}, "more than 5 redirects")
	out, err := call(t, fetch, map[string]any{"url": public.URL + "/hop"})
	if err != nil || out != "URL: "+public.URL+"/\n\npublic page" {
		t.Fatalf("hop: %q %v", out, err)
	}
}

// AllowPrivate lets loopback and private addresses through, never cloud
// metadata.
func TestFetchAllowPrivate(t *testing.T) {
	srv := page(t, "text/plain", "intranet page")
	fetch := tools(t, &search.Card{AllowPrivate: true})["web_fetch"]
	out, err := call(t, fetch, map[string]any{"url": srv.URL})
	if err != nil || !strings.HasSuffix(out, "\n\nintranet page") {
		t.Fatalf("%q %v", out, err)
	}
	retry(t, fetch, map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, "cloud metadata")
	retry(t, fetch, map[string]any{"url": "http://metadata.google.internal/"}, "cloud metadata")
}

// Text comes back capped; HTML without a content type is sniffed; text
// types pass; binary content is refused naming its type and size; HTTP
// errors name the status; Latin-1 is decoded.
func TestFetchContent(t *testing.T) {
	long := "<p>" + strings.Repeat("word ", 1000) + "</p>"
	cases := []struct {
		name, ctype, body string
		max               int
		want              string // a suffix of the answer, or of the retry error
		refused           bool
	}{
		{"capped html", "text/html", long, 100, "word word\n[truncated at 100 bytes]", false},
		{"capped text", "text/plain", strings.Repeat("x", 500), 100, strings.Repeat("x", 100) + "\n[truncated at 100 bytes]", false},
		{"plain", "text/plain; charset=utf-8", "line 1\nline 2", 0, "\n\nline 1\nline 2", false},
		{"json", "application/json", `{"a": 1}`, 0, `{"a": 1}`, false},
		{"sniffed html", "", "<html><body><p>sniffed</p></body></html>", 0, "\n\nsniffed", false},
		{"latin-1", "text/html; charset=ISO-8859-1", "<p>caf\xe9</p>", 0, "café", false},
		{"empty", "text/html", "<script>x()</script>", 0, "(no readable text)", false},
		{"png", "image/png", "\x89PNG\r\n\x1a\nrest", 0, "is image/png (12 bytes), not a text page", true},
		{"octet", "application/octet-stream", "\x00\x01\x02", 0, "is application/octet-stream (3 bytes), not a text page", true},
		{"pdf", "application/pdf", "%PDF-1.7", 0, "is application/pdf", true},
		{"nul in text", "text/plain", "a\x00b", 0, "holds binary data", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := page(t, c.ctype, c.body)
			fetch := tools(t, &search.Card{AllowPrivate: true, MaxFetchBytes: c.max})["web_fetch"]
			if c.refused {
				retry(t, fetch, map[string]any{"url": srv.URL}, c.want)
				return
			}
			out, err := call(t, fetch, map[string]any{"url": srv.URL})
			if err != nil || !strings.HasSuffix(out, c.want) {
				t.Fatalf("%q %v, want a suffix %q", out, err, c.want)
			}
		})
	}
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	fetch := tools(t, &search.Card{AllowPrivate: true})["web_fetch"]
	retry(t, fetch, map[string]any{"url": missing.URL + "/gone"}, "answered HTTP 404 Not Found")
	missing.Close()
	retry(t, fetch, map[string]any{"url": missing.URL + "/gone"}, "web_fetch: "+missing.URL+"/gone: ")
}

// A page larger than web_fetch downloads says it was cut even when its
// text fits.
func TestFetchHugePage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>start</p><script>")
		chunk := strings.Repeat("x", 1<<16)
		for range 70 { // 4.4 MiB
			fmt.Fprint(w, chunk)
		}
		fmt.Fprint(w, "</script><p>end</p>")
	}))
	defer srv.Close()
	out, err := call(t, tools(t, &search.Card{AllowPrivate: true})["web_fetch"], map[string]any{"url": srv.URL})
	if err != nil || !strings.HasSuffix(out, "\n\nstart\n[truncated at 4194304 bytes of the page]") {
		t.Fatalf("%q %v", out, err)
	}
}
