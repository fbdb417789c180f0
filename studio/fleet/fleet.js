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

  function cell(cls, text) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text || "";
    return td;
  }

  function rowOf(t) {
    const tr = document.createElement("tr");
    tr.dataset.team = t.id;
    const a = document.createElement("a");
    a.href = t.link;
    a.textContent = t.id;
    const first = cell("", "");
    first.append(a);
    const state = cell("state", t.state);
    if (t.error) state.title = t.error;
    tr.append(first, cell("template", t.template), cell("owner", t.owner), state, cell("last", t.last));
    return tr;
  }

  function pager(id, href) {
    const a = $(id);
    a.hidden = !href;
    a.setAttribute("href", href || "");
  }

  function draw(l) {
    page = l.page;
    $("teams").tBodies[0].replaceChildren(...l.teams.map(rowOf));
    $("teams").hidden = l.teams.length === 0;
    $("none").hidden = l.teams.length !== 0;
    pager("prev", l.prev);
    pager("next", l.next);
    $("pageinfo").textContent = "page " + l.page + " of " + l.pages + " · " + l.total + " teams";
    $("updated").textContent = "Updated " + new Date().toLocaleTimeString() + "; the list refreshes itself every " + Math.round(every / 1000) + " s.";
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
      $("updated").textContent = "Not refreshed (" + err.message + "); trying again in " + Math.round(every / 1000) + " s.";
      $("updated").classList.add("bad");
    } finally {
      busy = false;
    }
  }

  setInterval(load, every);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) load(); });
})();
