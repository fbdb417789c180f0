// Package studio serves a live page of a team in the browser:
// an http.Handler, Studio, that any program mounts for its
// orchestrator.Team, next to its own handlers or on its own listener
// (Studio.Serve).
//
// The page (plain HTML, CSS and JavaScript embedded in the binary, no build
// step) shows the members with their role, status (idle, thinking, using a
// tool, stopped) and spend; the conversation as it happens (who to whom,
// intent, text; tool calls folded with their results; model calls with
// tokens and cost; warnings and errors highlighted); the task board when
// the team has one (the planning tool's board); the usage per member; and
// an input box that speaks as the team's person (Options.Person): free
// text to a chosen member, slash commands completed from the commands each
// agent announced (agent.CommandsAnnouncedEvent), and answers to the
// questions agents asked the person. A Waterfall tab shows, per request
// of the person, each agent's turns on a time axis with their model calls
// (tokens, cost, latency) and tool calls, errors marked; it is built from
// the records' parent links, the ones the OpenTelemetry spans use. A
// click on a member opens its panel: its card, a summary of its config
// made on the server from chosen fields (never a key), its state, its
// model context against its window, its usage. A time slider shows the
// team as it was at any earlier record, read-only. The page works from a
// 360 px phone (one column, the sidebar folded) to a wide screen.
// Everything from the team is shown as text, never as HTML.
//
// # Transport
//
// The page follows a Server-Sent Events stream fed by a team subscriber.
// A page opened late, or reconnecting (the browser's Last-Event-ID, or
// ?after=ID), gets the history it lacks from Team.Messages, then follows:
// nothing is sent twice and nothing is skipped. When the history no longer
// holds the team's beginning (the in-memory window without an Archive) the
// page says how many records were left out. Each page has a bounded queue
// (Options.Buffer): the team never waits for a page; a page that falls
// further behind is sent a "reload" event and catches up from its last
// event. When the team stops, every stream is sent a "stopped" event and
// ends (what was queued is written even if the studio ends right after):
// the page shows the team stopped and does not reconnect.
//
// An answer an agent streams (its config's Runtime.Stream: the
// llm.TextDeltaEvents) is shown as it is written: "@Agent is writing…"
// with the text of its messages so far, until its message, or the end of
// its turn, arrives. That text is sent live only, as events of their own
// SSE type ("writing", without id): never queued with the records (a
// stream holds at most one per agent, the latest, however many deltas
// came meanwhile), never in the history a page catches up from. A page
// that misses some simply shows the next, or the message.
//
// # A team that runs elsewhere
//
// A Mirror is the same page for a team whose records come from elsewhere
// (a cluster's stream, another process): it is fed the records in the
// team's order (Mirror.Add) and told when the team stopped (Mirror.End);
// it keeps the last MirrorConfig.Keep of them for the pages that open
// later, derives the roster, the members' states and the person from
// them, and sends the person's input through MirrorConfig's functions.
// Package studio/fleet serves a cluster's teams this way.
//
// # Security
//
// Requests from loopback (peer and Host both loopback) are served as they
// are; any other request needs Options.Token (the URL's ?token=, or an
// "Authorization: Bearer" header), and without a Token it is refused.
// Input is only ever sent as Options.Person, only as JSON, and not from a
// page of another origin. The page's Content-Security-Policy allows its
// own script only.
package studio
