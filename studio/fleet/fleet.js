// The fleet console's list of teams: it fetches its page of the list
// again (teams.json) every refresh while the page is visible, and redraws
// the table, the pager and the time of the last refresh. Everything from
// the cluster is rendered with textContent, never as HTML.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const main = $("fleet");
  const token = new URLSearchParams(location.search).get("token") || "";
  const every = Math.max(Number(main.dataset.refresh) || 5000, 100);
  let page = Number(main.dataset.page) || 1;
  const period = every < 1000 ? (every / 1000).toFixed(1) + " s" : Math.round(every / 1000) + " s";

  function cell(cls, text) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text || "";
    return td;
  }

  // fill sets a row's cells to team t, touching only what changed: a
  // row being clicked is never replaced under the pointer.
  function fill(tr, t) {
    const [first, template, owner, state, last] = tr.cells;
    const a = first.firstElementChild;
    if (a.getAttribute("href") !== t.link) a.setAttribute("href", t.link);
    if (a.textContent !== t.id) a.textContent = t.id;
    for (const [td, v] of [[template, t.template], [owner, t.owner], [state, t.state], [last, t.last]]) {
      if (td.textContent !== (v || "")) td.textContent = v || "";
    }
    if (t.error) state.title = t.error; else state.removeAttribute("title");
  }

  function rowOf(t) {
    const tr = document.createElement("tr");
    tr.dataset.team = t.id;
    const first = cell("", "");
    first.append(document.createElement("a"));
    tr.append(first, cell("template"), cell("owner"), cell("state"), cell("last"));
    fill(tr, t);
    return tr;
  }

  // drawRows makes the table's rows those of teams, in order, keeping the
  // row of a team already shown.
  function drawRows(teams) {
    const body = $("teams").tBodies[0];
    const old = new Map([...body.rows].map((tr) => [tr.dataset.team, tr]));
    let at = body.firstElementChild;
    for (const t of teams) {
      let tr = old.get(t.id);
      if (tr) { fill(tr, t); old.delete(t.id); } else tr = rowOf(t);
      if (tr === at) at = at.nextElementSibling; else body.insertBefore(tr, at);
    }
    for (const tr of old.values()) tr.remove();
  }

  function pager(id, href) {
    const a = $(id);
    a.hidden = !href;
    a.setAttribute("href", href || "");
  }

  function draw(l) {
    page = l.page;
    drawRows(l.teams);
    $("teams").hidden = l.teams.length === 0;
    $("none").hidden = l.teams.length !== 0;
    pager("prev", l.prev);
    pager("next", l.next);
    $("pageinfo").textContent = "page " + l.page + " of " + l.pages + " · " + l.total + " teams";
    $("updated").textContent = "Updated " + new Date().toLocaleTimeString() + "; the list refreshes itself every " + period + ".";
    $("updated").classList.remove("bad");
  }

  let busy = false;
  async function load() {
    if (busy || document.hidden) return;
    busy = true;
    const q = new URLSearchParams({ page: String(page) });
    if (token) q.set("token", token);
    try {
      const r = await fetch("teams.json?" + q.toString(), { cache: "no-store" });
      if (!r.ok) throw new Error((await r.text()).trim() || String(r.status));
      draw(await r.json());
    } catch (err) {
      $("updated").textContent = "Not refreshed (" + err.message + "); trying again in " + period + ".";
      $("updated").classList.add("bad");
    } finally {
      busy = false;
    }
  }

  setInterval(load, every);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) load(); });
})();
