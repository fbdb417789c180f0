// The studio page: it follows the team's event stream (./events) and
// speaks as the team's person (./api/send). Everything from the team is
// rendered with textContent, never as HTML.
"use strict";

const params = new URLSearchParams(location.search);
const token = params.get("token") || "";
const $ = (id) => document.getElementById(id);

// el builds an element with a class and a text (never HTML).
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function withToken(path, extra) {
  const q = new URLSearchParams(extra || {});
  if (token) q.set("token", token);
  const s = q.toString();
  return s ? path + "?" + s : path;
}

const money = (c) => "$" + (c || 0).toFixed(4);
const num = (n) => (n || 0).toLocaleString("en-US");
const clock = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "");

let S; // the page's state, rebuilt from the stream on a reset

function resetState() {
  S = {
    person: "",
    members: new Map(), // agent id -> {who, name, role, person, status, cost, cmds}
    joined: new Set(),  // agent ids whose Start record was shown: a later one is a restore
    usage: new Map(),   // name -> {requests, in, out, cost}
    tools: new Map(),   // tool call id -> {details, summary, res}
    questions: new Map(), // message id -> {card, from}
    answering: null,    // {mid, from, text}
    writing: new Map(), // agent id -> {card, body}: the answers being streamed
    stopped: false,
    lastId: "",
    fall: newFall(),    // the waterfall: the person's requests and their turns
    cards: new Map(),   // role -> its card, for the member panel
    selected: "",       // the member whose panel is open
    log: [],            // every event shown, in order: {ev, rec}, for the time slider
    records: 0,         // how many of them are records (have an id)
    at: null,           // the record shown (the slider), null: live
    atTime: 0,          // its time
  };
  $("member-panel").hidden = true;
  $("banner").hidden = true;
  $("feed").replaceChildren();
  $("members").replaceChildren();
  $("board").replaceChildren();
  $("board-section").hidden = true;
  $("fall-req").replaceChildren();
  $("fall-rows").replaceChildren();
  $("fall-sum").textContent = "";
  renderUsage();
  setAnswering(null);
  drawTime();
}

// ---- the stream ----

let source = null;

function connect(after) {
  if (source) source.close();
  const q = {};
  if (after) q.after = after;
  setConn("wait", after ? "catching up…" : "loading…");
  source = new EventSource(withToken("events", q));
  source.onmessage = (e) => {
    // A record carries an id of its own; a control event leaves the last one.
    const rec = !!e.lastEventId && e.lastEventId !== S.lastId;
    if (e.lastEventId) S.lastId = e.lastEventId;
    let ev;
    try { ev = JSON.parse(e.data); } catch (err) { return; }
    receive(ev, rec);
  };
  // A streamed answer's text so far: its own event type, live only (no
  // id: a reconnecting page is not sent it again, the final message is).
  source.addEventListener("writing", (e) => {
    let ev;
    try { ev = JSON.parse(e.data); } catch (err) { return; }
    if (S.at === null) handle(ev);
  });
  source.onerror = () => {
    if (!S.stopped) setConn("wait", "reconnecting…");
  };
}

function setConn(kind, text) {
  const c = $("conn");
  c.className = "pill pill-" + kind;
  c.textContent = text;
}

function handle(ev) {
  const f = handlers[ev.k];
  if (f) f(ev);
}

// ---- the time slider ----
//
// Every event shown is kept, in order, so that the page can show the team
// as it was at record N: the roster, the board, the usage, the waterfall
// and the conversation rebuilt from the events up to it (the snapshots of
// now, sent before the history, are skipped). That view is read-only;
// the live events keep coming in and are shown on the way back to live.

// transient events are about the stream, not the team: not kept.
const transient = new Set(["hello", "person", "live", "stopped", "reload", "writing"]);

function receive(ev, rec) {
  if (!transient.has(ev.k)) {
    S.log.push({ ev, rec });
    if (rec) S.records++;
    drawTime();
  }
  if (S.at === null || transient.has(ev.k) && ev.k !== "writing") handle(ev);
}

function drawTime() {
  const t = $("time");
  t.max = String(S.records);
  t.value = String(S.at === null ? S.records : S.at);
  $("time-label").textContent = S.at === null ? "live · " + S.records + " records" :
    "record " + S.at + " of " + S.records + (S.atTime ? " · " + clock(S.atTime) : "");
  $("time-live").hidden = S.at === null;
  document.body.classList.toggle("past", S.at !== null);
}

// rebuild shows the team at record upTo (null: everything, live).
function rebuild(upTo) {
  const keep = { log: S.log, records: S.records, person: S.person, lastId: S.lastId, stopped: S.stopped, chosen: S.fall.chosen, selected: S.selected };
  const fallOpen = !$("fall").hidden;
  resetState();
  Object.assign(S, { person: keep.person, lastId: keep.lastId, log: keep.log, records: keep.records, at: upTo, selected: keep.selected });
  S.fall.chosen = keep.chosen;
  let recs = 0;
  for (const e of keep.log) {
    if (e.rec) {
      if (upTo !== null && recs >= upTo) break;
      recs++;
      S.atTime = e.ev.at;
    }
    if (upTo !== null && e.ev.snap) continue;
    handle(e.ev);
  }
  if (keep.stopped) handlers.stopped();
  if (upTo !== null) {
    const b = $("banner");
    b.textContent = "An earlier moment: the team as it was at record " + upTo + " of " + S.records + ". Read-only; Back to live shows it now.";
    b.hidden = false;
  }
  drawTime();
  drawPanel();
  updateCompose();
  if (fallOpen) drawFall();
  $("feed").scrollTop = $("feed").scrollHeight;
}

const handlers = {
  hello(ev) {
    if (ev.reset) resetState();
    S.person = ev.who || "";
    document.title = ev.title;
    $("title").textContent = ev.title;
    $("team").textContent = "team " + ev.team;
    updateCompose();
  },
  members(ev) {
    for (const m of ev.list || []) upsertMember(m);
  },
  cards(ev) { // the whole catalog: it replaces the cards shown
    S.cards.clear();
    for (const c of ev.cards || []) S.cards.set(c.role, c);
    drawPanel();
  },
  gap(ev) { addItem(el("div", "item gap", ev.text)); },
  live(ev) {
    if (ev.live) setConn("live", "live");
  },
  // The team has stopped: nothing more will come, so the stream is closed
  // (no reconnecting), the members shown stopped and the input disabled.
  stopped() {
    S.stopped = true;
    if (source) source.close();
    for (const who of [...S.writing.keys()]) doneWriting(who);
    setConn("stop", "team stopped");
    for (const m of S.members.values()) setStatus(m, "stopped");
    const b = $("banner");
    b.textContent = "The team has stopped. This page shows what it did; nothing more will come.";
    b.hidden = false;
    for (const q of S.questions.values()) q.button.disabled = true; // nobody is there to answer
    if (stick) $("feed").scrollTop = $("feed").scrollHeight;
    updateCompose();
  },
  reload(ev) {
    addItem(el("div", "item gap", ev.text));
    connect(S.lastId);
  },
  // A member's Start record. One of an agent that already joined is its
  // restore (a team restored from its log, a cluster team taken over by
  // another worker writes every member's Start again): the member is
  // shown once, its row and what it spent kept.
  join(ev) {
    const again = S.joined.has(ev.who);
    S.joined.add(ev.who);
    upsertMember(ev);
    if (again) {
      addItem(el("div", "item sys restored", "↻ " + ev.name + " (" + ev.role + ") restored"));
      return;
    }
    const by = ev.by ? ", hired by " + ev.by : "";
    addItem(el("div", "item sys", "+ " + ev.name + " (" + ev.role + ") joined the team" + by));
  },
  // The person became known after the hello (a cluster team's page opened
  // before its person's record was stored): the page can speak from now.
  person(ev) {
    if (!ev.who || S.person === ev.who) return;
    S.person = ev.who;
    for (const m of S.members.values()) { m.person = m.who === S.person; drawMember(m); }
    updateRecipients();
    hint("");
    updateCompose();
  },
  leave(ev) {
    doneWriting(ev.who);
    const m = S.members.get(ev.who);
    if (m) setStatus(m, "stopped");
  },
  busy(ev) { status(ev.who, "thinking"); fallTurn(ev); },
  idle(ev) { doneWriting(ev.who); status(ev.who, "idle"); fallTurnEnd(ev); },
  msg(ev) { doneWriting(ev.who); addMessage(ev); fallMessage(ev); },
  writing(ev) { showWriting(ev); },
  tool(ev) {
    doneWriting(ev.who);
    status(ev.who, "tool", ev.tool);
    const d = el("details", "item tool");
    const s = el("summary");
    s.append(el("span", "", "⚙ " + ev.name + " · " + ev.tool + " "));
    const res = el("span", "", "…");
    s.append(res);
    d.append(s);
    d.append(el("div", "dim", "arguments"));
    d.append(el("pre", "", pretty(ev.text)));
    S.tools.set(ev.call, { details: d, res });
    addItem(d);
    fallTool(ev);
  },
  toolout(ev) {
    const t = S.tools.get(ev.call);
    if (!t) return;
    t.details.append(el("div", "dim", "result"));
    t.details.append(el("pre", "", ev.text || ""));
  },
  toolret(ev) {
    const t = S.tools.get(ev.call);
    if (t) {
      t.res.textContent = ev.ok ? "✓" : "✗ failed";
      t.res.className = ev.ok ? "res-ok" : "res-fail";
    }
    status(ev.who, "thinking");
    fallToolEnd(ev);
  },
  model(ev) {
    const m = S.members.get(ev.who);
    if (m) { m.cost += ev.cost || 0; m.context = ev.in || 0; drawMember(m); }
    const u = S.usage.get(ev.name) || { requests: 0, in: 0, out: 0, cost: 0 };
    u.requests++; u.in += ev.in || 0; u.out += ev.out || 0; u.cost += ev.cost || 0;
    S.usage.set(ev.name, u);
    renderUsage();
    drawPanel();
    const took = !ev.ms ? "" : ev.ms < 1000 ? " in " + ev.ms + " ms" : " in " + (ev.ms / 1000).toFixed(1) + " s";
    addItem(el("div", "item model", ev.name + " · " + ev.model + ": " + num(ev.in) + " in + " + num(ev.out) + " out tokens, " + money(ev.cost) + took));
    fallModel(ev);
  },
  commands(ev) {
    const m = S.members.get(ev.who);
    if (m) { m.cmds = ev.cmds || []; updateCommands(); }
  },
  warn(ev) { addItem(el("div", "item warn", "! " + ev.name + ": " + ev.text)); },
  error(ev) { addItem(el("div", "item error", "✗ " + ev.name + ": " + ev.text)); fallError(ev); },
  note(ev) { addItem(el("div", "item sys", ev.name + ": " + ev.text)); },
  stopping() { addItem(el("div", "item sys", "the team is stopping")); },
  board(ev) { renderBoard(ev); },
};

function pretty(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s || ""; }
}

// ---- the feed ----

// addItem adds a record's node to the feed, above the answers being
// written (they stay at the bottom).
function addItem(node) {
  const feed = $("feed");
  const atBottom = feed.scrollHeight - feed.scrollTop - feed.clientHeight < 40;
  const w = S.writing.values().next();
  feed.insertBefore(node, w.done ? null : w.value.card);
  if (atBottom) feed.scrollTop = feed.scrollHeight;
}

// showWriting shows an answer being streamed: "@Agent is writing…" and
// the text of its messages so far, until its message (or its turn's end)
// arrives.
function showWriting(ev) {
  const feed = $("feed");
  const atBottom = feed.scrollHeight - feed.scrollTop - feed.clientHeight < 40;
  let w = S.writing.get(ev.who);
  if (!w) {
    const card = el("div", "item msg writing");
    const head = el("div", "head");
    head.append(el("span", "who", ev.name), document.createTextNode(" is writing…"));
    w = { card, body: el("div", "body") };
    card.append(head, w.body);
    S.writing.set(ev.who, w);
    feed.append(card);
  }
  w.body.textContent = ev.text || "";
  if (atBottom) feed.scrollTop = feed.scrollHeight;
}

function doneWriting(who) {
  const w = S.writing.get(who);
  if (w) {
    w.card.remove();
    S.writing.delete(who);
  }
}

function addMessage(ev) {
  const card = el("div", "item msg");
  if (ev.who === S.person) card.classList.add("from-person");
  if (ev.to === S.person) card.classList.add("to-person");
  const head = el("div", "head");
  head.append(el("span", "who", ev.name), document.createTextNode(" → "), el("span", "who", ev.toName));
  head.append(el("span", "intent", ev.intent), document.createTextNode("  " + clock(ev.at)));
  card.append(head, el("div", "body", ev.text || ""));
  // An approval request (a tool call waiting): approve or deny it, the
  // text typed being the reason.
  if (ev.to === S.person && ev.call) {
    const bar = el("span", "approval");
    for (const [label, approve] of [["Approve", true], ["Deny", false]]) {
      const b = el("button", "small answer-btn", label);
      b.type = "button";
      b.onclick = () => decide(ev.mid, approve);
      bar.append(b);
    }
    card.append(bar);
    S.questions.set(ev.mid, { card, button: bar });
  } else if (ev.to === S.person && (ev.intent === "request" || ev.intent === "instruction")) {
    // A question for the person: it can be answered from here.
    const b = el("button", "small answer-btn", "Answer");
    b.type = "button";
    b.onclick = () => setAnswering({ mid: ev.mid, from: ev.name, text: ev.text });
    card.append(b);
    S.questions.set(ev.mid, { card, button: b });
  }
  // The person's answer closes the question.
  if (ev.who === S.person && ev.parent && S.questions.has(ev.parent)) {
    const q = S.questions.get(ev.parent);
    q.button.remove();
    q.card.append(el("div", "answered", "✓ answered"));
    S.questions.delete(ev.parent);
    if (S.answering && S.answering.mid === ev.parent) setAnswering(null);
  }
  addItem(card);
}

// ---- the waterfall ----
//
// Where the time and money went, per request of the person: each agent's
// turns on a time axis, and inside them the model calls (tokens, cost,
// latency) and the tool calls, errors marked. Built from the records with
// the links the OpenTelemetry spans use: a turn on message M belongs to
// the request of the turn that sent M (M's parent is the message that
// turn was handling); a person's message without a known parent starts a
// request; a model call or a tool call belongs to its agent's running turn.

function newFall() {
  return {
    reqs: [],            // {mid, text, at, turns: []}, in order
    ofMsg: new Map(),    // message id -> its request
    running: new Map(),  // agent id -> its running turn
    calls: new Map(),    // tool call id -> its span
    chosen: "",          // the request the person chose ("" : the latest)
  };
}

function fallMessage(ev) {
  const F = S.fall;
  let req = ev.parent ? F.ofMsg.get(ev.parent) : undefined;
  if (!req && ev.who === S.person) {
    req = { mid: ev.mid, text: ev.text || "", at: ev.at, turns: [] };
    F.reqs.push(req);
    drawFallChoices();
  }
  if (req) F.ofMsg.set(ev.mid, req);
  drawFallSoon();
}

function fallTurn(ev) {
  const F = S.fall, req = F.ofMsg.get(ev.mid);
  // The person is not an agent: the time until its answer shows as a gap.
  if (!req || ev.who === S.person) { F.running.delete(ev.who); return; }
  const turn = { who: ev.who, name: ev.name, start: ev.at, end: 0, error: false, spans: [] };
  req.turns.push(turn);
  F.running.set(ev.who, turn);
  drawFallSoon();
}

function fallTurnEnd(ev) {
  if (ev.handled) return; // consumed by the running turn: it goes on
  const t = S.fall.running.get(ev.who);
  if (t) { t.end = ev.at; S.fall.running.delete(ev.who); drawFallSoon(); }
}

function fallModel(ev) {
  const t = S.fall.running.get(ev.who);
  if (!t) return;
  const took = ev.ms || 0;
  t.spans.push({ kind: "model", label: ev.model, start: ev.at - took, end: ev.at, ms: took,
    meta: num(ev.in) + " in + " + num(ev.out) + " out · " + money(ev.cost), in: ev.in || 0, out: ev.out || 0, cost: ev.cost || 0 });
  drawFallSoon();
}

function fallTool(ev) {
  const t = S.fall.running.get(ev.who);
  if (!t) return;
  const span = { kind: "tool", label: ev.tool, start: ev.at, end: 0, meta: "", error: false };
  t.spans.push(span);
  S.fall.calls.set(ev.call, span);
  drawFallSoon();
}

function fallToolEnd(ev) {
  const span = S.fall.calls.get(ev.call);
  if (!span) return;
  span.end = ev.at;
  span.error = !ev.ok;
  span.meta = ev.ok ? "✓" : "✗ failed";
  S.fall.calls.delete(ev.call);
  drawFallSoon();
}

function fallError(ev) {
  const t = S.fall.running.get(ev.who);
  if (t) { t.error = true; drawFallSoon(); }
}

function fallChosen() {
  const F = S.fall;
  return F.reqs.find((r) => r.mid === F.chosen) || F.reqs[F.reqs.length - 1];
}

function drawFallChoices() {
  const sel = $("fall-req"), F = S.fall;
  sel.replaceChildren(...F.reqs.map((r, i) => {
    const o = el("option", "", "#" + (i + 1) + " " + clock(r.at) + " " + (r.text.length > 60 ? r.text.slice(0, 57) + "…" : r.text));
    o.value = r.mid;
    return o;
  }));
  const r = fallChosen();
  if (r) sel.value = r.mid;
}

let fallPending = false;
function drawFallSoon() {
  if ($("fall").hidden || fallPending) return;
  fallPending = true;
  requestAnimationFrame(() => { fallPending = false; drawFall(); });
}

const took = (ms) => (ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(1) + " s");

function drawFall() {
  const req = fallChosen(), rows = $("fall-rows");
  if (!req) { rows.replaceChildren(el("div", "dim", "No request from the person yet.")); $("fall-sum").textContent = ""; return; }
  const now = Date.now();
  const endOf = (x) => x.end || (S.stopped ? x.start : now);
  let t0 = req.at, t1 = req.at + 1;
  for (const t of req.turns) {
    t0 = Math.min(t0, t.start); t1 = Math.max(t1, endOf(t));
    for (const sp of t.spans) { t0 = Math.min(t0, sp.start); t1 = Math.max(t1, endOf(sp)); }
  }
  const span = t1 - t0;
  const bar = (start, end) => {
    const track = el("span", "ftrack"), b = el("span", "fbar");
    b.style.left = ((start - t0) / span * 100).toFixed(2) + "%";
    b.style.width = (Math.max(end - start, 0) / span * 100).toFixed(2) + "%";
    track.append(b);
    return track;
  };
  const out = [];
  const sum = { agents: new Set(), models: 0, tools: 0, in: 0, out: 0, cost: 0, errors: 0 };
  const turns = [...req.turns].sort((a, b) => a.start - b.start);
  for (const t of turns) {
    sum.agents.add(t.who);
    const r = el("div", "frow turn" + (t.error ? " err" : "") + (t.end ? "" : " open"));
    r.dataset.who = t.name;
    r.dataset.start = String(t.start);
    r.append(el("span", "flabel", t.name), bar(t.start, endOf(t)),
      el("span", "fmeta", (t.end ? took(t.end - t.start) : "running") + (t.error ? " · error" : "")));
    out.push(r);
    for (const sp of [...t.spans].sort((a, b) => a.start - b.start)) {
      const c = el("div", "frow " + sp.kind + (sp.error ? " err" : "") + (sp.end ? "" : " open"));
      c.dataset.who = t.name;
      const dur = sp.end ? took(sp.end - sp.start) : "running";
      c.append(el("span", "flabel", (sp.kind === "model" ? "◆ " : "⚙ ") + sp.label), bar(sp.start, endOf(sp)),
        el("span", "fmeta", [sp.meta, dur].filter(Boolean).join(" · ")));
      out.push(c);
      if (sp.kind === "model") { sum.models++; sum.in += sp.in; sum.out += sp.out; sum.cost += sp.cost; } else sum.tools++;
      if (sp.error) sum.errors++;
    }
    if (t.error) sum.errors++;
  }
  rows.replaceChildren(...out);
  $("fall-sum").textContent = sum.agents.size + " agents · " + turns.length + " turns · " + sum.models + " model calls · " +
    sum.tools + " tool calls · " + num(sum.in) + " in + " + num(sum.out) + " out tokens · " + money(sum.cost) + " · " + took(t1 - t0) +
    (sum.errors ? " · " + sum.errors + " errors" : "");
}

function showTab(fall) {
  $("feed").hidden = fall;
  $("fall").hidden = !fall;
  $("tab-feed").classList.toggle("on", !fall);
  $("tab-fall").classList.toggle("on", fall);
  $("tab-feed").setAttribute("aria-selected", String(!fall));
  $("tab-fall").setAttribute("aria-selected", String(fall));
  if (fall) drawFall();
}

// ---- members, board, usage ----

function upsertMember(m) {
  let x = S.members.get(m.who);
  if (!x) {
    x = { who: m.who, cost: 0, cmds: [], status: "idle", li: el("li"), context: 0 };
    x.li.tabIndex = 0;
    x.li.addEventListener("click", () => selectMember(x.who));
    x.li.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectMember(x.who); } });
    S.members.set(m.who, x);
    $("members").append(x.li);
  }
  x.name = m.name; x.role = m.role; x.person = m.who === S.person;
  if (m.info) x.info = m.info;
  if (m.by) x.by = m.by;
  if (x.status === "stopped") x.status = "idle";
  drawMember(x);
  updateRecipients();
}

function status(who, s, tool) {
  const m = S.members.get(who);
  if (m && m.status !== "stopped") setStatus(m, s, tool);
}

function setStatus(m, s, tool) {
  m.status = s;
  m.tool = tool || "";
  drawMember(m);
  if (s === "stopped") updateRecipients();
}

const statusText = { idle: "idle", thinking: "thinking", tool: "using a tool", stopped: "stopped" };

function drawMember(m) {
  m.li.className = (m.person ? "person" : "") + (S.selected === m.who ? " sel" : "");
  if (S.selected === m.who) drawPanel();
  const st = el("span", "status s-" + m.status, m.status === "tool" && m.tool ? "using " + m.tool : statusText[m.status]);
  m.li.replaceChildren(
    el("span", "mname", m.name + (m.person ? " (you)" : "")), st,
    el("span", "mrole", m.role), el("span", "mspend", m.person ? "" : money(m.cost)));
}

// ---- the member panel ----
//
// What a member holds: its card, a summary of its config (the server
// sends chosen fields only, never a key), its state, its model context
// (the last call's input tokens) against its window, its usage and its
// limits.

function selectMember(who) {
  S.selected = S.selected === who ? "" : who;
  for (const m of S.members.values()) m.li.classList.toggle("sel", m.who === S.selected);
  drawPanel();
}

function drawPanel() {
  const m = S.members.get(S.selected), panel = $("member-panel");
  if (!m) { panel.hidden = true; return; }
  panel.hidden = false;
  $("mp-title").textContent = m.name + (m.person ? " (you)" : "");
  const rows = [];
  const add = (k, v) => { if (v !== undefined && v !== null && v !== "") rows.push(el("dt", "", k), typeof v === "string" ? el("dd", "", v) : v); };
  add("role", m.role);
  add("state", m.status === "tool" && m.tool ? "using " + m.tool : statusText[m.status]);
  if (m.by) add("hired by", m.by);
  const card = S.cards.get(m.role);
  if (card) {
    add("card", card.desc);
    if (card.skills && card.skills.length) add("skills", card.skills.join(", "));
    add("hireable", card.hireable ? "yes" : "no");
    add("routes to", card.routesTo && card.routesTo.length ? card.routesTo.join(", ") : "any role");
  }
  const info = m.info;
  if (info) {
    add("model", info.model + (info.where ? " (" + info.where + ")" : ""));
    const dd = el("dd");
    if (info.window) {
      const pct = Math.min(100, m.context / info.window * 100);
      dd.append(document.createTextNode(num(m.context) + " of " + num(info.window) + " tokens (" + pct.toFixed(1) + "%)"));
      const meter = el("span", "meter"), fill = el("span");
      fill.style.width = pct.toFixed(1) + "%";
      meter.append(fill);
      dd.append(meter);
    } else {
      dd.textContent = num(m.context) + " tokens (no window configured)";
    }
    add("context", dd);
    add("tools", (info.tools || []).join(", ") || "none");
    add("retries", String(info.retries || 0));
    add("streaming", info.stream ? "yes" : "no");
    add("limits", (info.limits || []).join(", ") || "none");
  }
  const u = S.usage.get(m.name);
  if (!m.person) add("usage", u ? num(u.requests) + " requests · " + num(u.in) + " in + " + num(u.out) + " out tokens · " + money(u.cost) : "no model call yet");
  $("mp-body").replaceChildren(...rows);
  $("mp-prompt-box").hidden = !(info && info.prompt);
  $("mp-prompt").textContent = info ? info.prompt || "" : "";
}

function renderBoard(ev) {
  const list = $("board");
  if (ev.text === "none") { $("board-section").hidden = true; return; }
  $("board-section").hidden = false;
  const tasks = ev.tasks || [];
  if (!tasks.length) { list.replaceChildren(el("li", "dim", "no tasks")); return; }
  list.replaceChildren(...tasks.map((t) => {
    const li = el("li", "t-" + t.status);
    li.append(el("div", "", "#" + t.id + " " + t.description));
    const meta = [t.status, t.owner ? "owner " + t.owner : "unassigned"];
    if (t.dependencies && t.dependencies.length) meta.push("after #" + t.dependencies.join(", #"));
    li.append(el("div", "tmeta", meta.join(" · ")));
    if (t.output) li.append(el("div", "tmeta", "→ " + t.output));
    return li;
  }));
}

function renderUsage() {
  const body = $("usage").tBodies[0], foot = $("usage").tFoot;
  const total = { requests: 0, in: 0, out: 0, cost: 0 };
  const rows = [...S.usage.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([name, u]) => {
    total.requests += u.requests; total.in += u.in; total.out += u.out; total.cost += u.cost;
    return row(name, u);
  });
  body.replaceChildren(...rows);
  foot.replaceChildren(row("total", total));
}

function row(name, u) {
  const tr = el("tr");
  for (const v of [name, num(u.requests), num(u.in), num(u.out), money(u.cost)]) tr.append(el("td", "", v));
  return tr;
}

// ---- the input box ----

function canSend() { return !!S.person && !S.stopped && S.at === null; }

function updateCompose() {
  const on = canSend();
  $("text").disabled = !on;
  $("send").disabled = !on;
  $("to").disabled = !on || !!S.answering;
  if (!S.person) hint("read-only: this studio speaks for no person");
  else if (S.stopped) hint("the team has stopped");
  else if (S.at !== null) hint("an earlier moment is shown: read-only");
}

function updateRecipients() {
  const sel = $("to"), keep = sel.value;
  const opts = [...S.members.values()].filter((m) => !m.person && m.status !== "stopped");
  sel.replaceChildren(...opts.map((m) => {
    const o = el("option", "", m.name + " (" + m.role + ")");
    o.value = m.who;
    return o;
  }));
  if (opts.some((m) => m.who === keep)) sel.value = keep;
  updateCommands();
}

function commandsOf() {
  const m = S.members.get($("to").value);
  return m ? m.cmds : [];
}

function updateCommands() {
  $("commands").replaceChildren(...commandsOf().map((c) => {
    const o = el("option");
    o.value = "/" + c.name;
    o.label = c.desc || "";
    return o;
  }));
  showHint();
}

// showHint lists the commands that match what is typed after "/".
function showHint() {
  const t = $("text").value;
  if (!t.startsWith("/")) { hint(""); return; }
  const word = t.slice(1).split(/\s/)[0];
  const hits = commandsOf().filter((c) => c.name.startsWith(word));
  if (!hits.length) { hint("no command of this member starts with /" + word); return; }
  if (hits.length === 1) {
    const c = hits[0];
    hint("/" + c.name + (c.args ? " " + c.args : "") + " — " + c.desc + (t === "/" + word ? "   (Tab completes)" : ""));
    return;
  }
  hint(hits.map((c) => "/" + c.name).join("  "));
}

function hint(text, bad) {
  const h = $("hint");
  h.textContent = text;
  h.className = "hint dim" + (bad ? " bad" : "");
}

function setAnswering(q) {
  S.answering = q;
  $("answering").hidden = !q;
  if (q) {
    $("answering-text").textContent = "Answering " + q.from + ": " + (q.text.length > 120 ? q.text.slice(0, 117) + "…" : q.text);
    $("text").placeholder = "Your answer to " + q.from;
    $("text").focus();
  } else {
    $("text").placeholder = "Message, or / for commands";
  }
  updateCompose();
}

async function submit(e) {
  e.preventDefault();
  const text = $("text").value.trim();
  if (!text || !canSend()) return;
  const body = S.answering && !text.startsWith("/") ? { answer: S.answering.mid, text } : { to: $("to").value, text };
  $("send").disabled = true;
  try {
    const r = await fetch(withToken("api/send"), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!r.ok) {
      hint((await r.text()).trim() || "sending failed: " + r.status, true);
      return;
    }
    $("text").value = "";
    hint("sent");
  } catch (err) {
    hint("sending failed: " + err, true);
  } finally {
    updateCompose();
  }
}

// decide approves or denies the approval request mid; the text typed, if
// any, is the reason.
async function decide(mid, approve) {
  const text = $("text").value.trim();
  const reason = text.startsWith("/") ? "" : text;
  try {
    const r = await fetch(withToken("api/send"), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ answer: mid, approve, text: reason }),
    });
    if (!r.ok) {
      hint((await r.text()).trim() || "sending failed: " + r.status, true);
      return;
    }
    if (reason) $("text").value = "";
    hint(approve ? "approved" : "denied");
  } catch (err) {
    hint("sending failed: " + err, true);
  }
}

$("compose").addEventListener("submit", submit);
$("text").addEventListener("input", showHint);
$("text").addEventListener("keydown", (e) => {
  const t = $("text").value;
  if (e.key !== "Tab" || !t.startsWith("/") || /\s/.test(t)) return;
  const hits = commandsOf().filter((c) => c.name.startsWith(t.slice(1)));
  if (hits.length === 1) {
    e.preventDefault();
    $("text").value = "/" + hits[0].name + (hits[0].args ? " " : "");
    showHint();
  }
});
$("to").addEventListener("change", updateCommands);
$("answering-cancel").addEventListener("click", () => setAnswering(null));
// The conversation stays at its end while the person has not scrolled
// up, also when the window is resized (a phone turned, a half screen).
let stick = true;
$("feed").addEventListener("scroll", () => {
  const feed = $("feed");
  stick = feed.scrollHeight - feed.scrollTop - feed.clientHeight < 40;
});
window.addEventListener("resize", () => {
  if (stick) $("feed").scrollTop = $("feed").scrollHeight;
});
let timePending = false;
$("time").addEventListener("input", () => {
  if (timePending) return; // one rebuild per frame while the slider is dragged
  timePending = true;
  requestAnimationFrame(() => {
    timePending = false;
    const n = Number($("time").value);
    rebuild(n >= S.records ? null : n);
  });
});
$("time-live").addEventListener("click", () => rebuild(null));
$("tab-feed").addEventListener("click", () => showTab(false));
$("tab-fall").addEventListener("click", () => showTab(true));
$("fall-req").addEventListener("change", () => { S.fall.chosen = $("fall-req").value; drawFall(); });
// On a narrow screen the sidebar folds behind the Team button.
$("side-toggle").addEventListener("click", () => {
  const open = document.body.classList.toggle("side-open");
  $("side-toggle").setAttribute("aria-expanded", String(open));
  $("side-toggle").textContent = open ? "Conversation" : "Team";
});

resetState();
connect("");
