// Package search is the SearchTool card: web search and page fetching for
// LLM agents.
//
// # Capabilities
//
//   - Search: the model tool web_search(query, max_results=5) asks the
//     card's [Provider] for at most max_results results (1 to 20) and
//     answers them numbered, each with its title, URL and snippet. A
//     provider that fails (no API key, an error answer, a rate limit that
//     outlasts its retries) is explained in the answer rather than
//     returned as an error, so a run goes on without search; an empty
//     query is a retry error.
//   - Fetch: web_fetch(url) downloads the page (at most 4 MiB, 30 s, 5
//     redirects) and answers "URL: ...", "Title: ..." and its readable
//     text: headings as "#" lines, paragraphs, list items as "- " or "1. "
//     lines, the text of links; scripts, styles, navigation, asides,
//     footers, forms' controls and embedded objects are dropped and
//     whitespace is collapsed (kept inside pre). The text is cut at
//     [Card.MaxFetchBytes] (32 KiB by default) and then ends with a line
//     "[truncated at N bytes]" (a page larger than 4 MiB ends with a line
//     saying only its first 4 MiB were read). text/* and JSON/XML-like types come back as
//     they are; other content (images, PDF, archives) is refused with a
//     retry error naming its type and size.
//
// Both are model tools by default and may also be exposed as commands
// ([tool.Capability.Expose]). Neither touches the owning agent, so an agent
// may run them concurrently.
//
// # Providers
//
// [Tavily], [Brave] and [SearXNG] call those services over HTTP
// ([Endpoint] sets their URL, key, client and retries); [Fixed] serves the
// results of a JSON file, for offline runs. API keys come from
// TAVILY_API_KEY and BRAVE_API_KEY unless given in code; they are sent only
// in request headers, never logged, and cut out of every error. A 429 or
// 5xx answer is retried (twice by default) after the Retry-After the
// service gave, in seconds or as an HTTP date, or after 1 s then 2 s; a
// Retry-After longer than [Endpoint.MaxWait] fails at once with an
// [*APIError].
//
// # Address checks (SSRF)
//
// web_fetch refuses URLs whose scheme is not http or https, and pages on
// loopback, private (RFC 1918, RFC 6598, fc00::/7), link-local
// (169.254.0.0/16, fe80::/10), unspecified, multicast, reserved and cloud
// metadata addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200,
// metadata.google.internal). The address is checked when the connection
// is dialed, after DNS resolution, on every connection of a fetch, so a
// redirect to such an address, or a name that resolves to one the second
// time (DNS rebinding), is refused too; each redirect's URL is checked as
// well. IPv4 addresses inside NAT64 and 6to4 addresses are judged as IPv4.
// [Card.AllowPrivate] allows every class but cloud metadata (an intranet,
// tests). Fetches go direct: HTTP proxies from the environment are not
// used, as the check must see the page's own address.
package search
