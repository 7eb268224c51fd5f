// Live sessions with their state, agent, intent, changed files and overlap
// warnings, kept current by each repository's event stream. The page
// follows live sessions only: a stream starts now (not at the start of
// the log), a session's earlier overlaps come from its own events, and a
// session that closes is dropped.
import { get, getList, stream } from "./api.js";
import { h, clear, age, badge, errorBox, agentLabel } from "./dom.js";
import { sessionLink, cutList } from "./links.js";

const LIVE = new Set(["active", "submitted"]);
const PATHS = 20; // changed paths shown per session before "show all"

export async function sessionsPage() {
  document.title = "Sessions · sessiond";
  const repos = (await get("/v1/repos")).repos || [];
  const rows = new Map(); // id → {session, files, overlaps}: live sessions only
  const tbody = h("tbody", { id: "sessions-body" });
  const status = h("p", { class: "muted", id: "sessions-status", "aria-live": "polite" });
  const root = h("section", {},
    h("h1", {}, "Live sessions"), status,
    h("table", { class: "list" }, h("caption", { class: "sr-only" }, "Live sessions"),
      h("thead", {}, h("tr", {}, ["Session", "Repository", "State", "Agent", "Intent", "Changed files", "Overlaps", "Last active"].map((c) => h("th", { scope: "col" }, c)))),
      tbody));

  const draw = () => {
    const live = [...rows.values()].filter((r) => LIVE.has(r.session.state)).sort((a, b) => b.session.last_active_at.localeCompare(a.session.last_active_at));
    clear(tbody, live.length ? live.map(row) : h("tr", {}, h("td", { colspan: 8 }, "No live sessions.")));
    tbody.dataset.tracked = [...rows.keys()].join(" ");
    status.textContent = `${live.length} live session${live.length === 1 ? "" : "s"}, updated ${new Date().toLocaleTimeString()}`;
  };
  const row = (r) => {
    const s = r.session;
    return h("tr", { "data-session": s.id },
      h("td", { "data-label": "Session" }, sessionLink(s.id)),
      h("td", { "data-label": "Repository" }, s.repo),
      h("td", { "data-label": "State" }, badge(s.state)),
      h("td", { "data-label": "Agent" }, agentLabel(s.agent_id, s.agent_name)),
      h("td", { "data-label": "Intent" }, s.intent),
      h("td", { "data-label": "Changed files", class: "changed" }, r.error ? errorBox(r.error) :
        r.files.length ? cutList("ul", { class: "paths" }, r.files.map((f) => h("li", {}, h("abbr", { title: f.status }, f.status[0].toUpperCase()), " ", h("code", {}, f.path))), PATHS,
          { shown: r.showAll, onShowAll: () => { r.showAll = true; } }) : "none"),
      h("td", { "data-label": "Overlaps", class: "overlaps" }, r.overlaps.size ? h("ul", { class: "warnings" }, [...r.overlaps.values()].map((o) =>
        h("li", { class: "overlap" }, h("code", {}, o.path), " with ", sessionLink(o.other), o.other_agent ? ` (${o.other_agent})` : "",
          o.merge === "conflict" ? " — conflicts" : ""))) : "none"),
      h("td", { "data-label": "Last active" }, h("time", { datetime: s.last_active_at }, age(s.last_active_at))));
  };
  const refresh = async (id) => {
    const known = rows.get(id);
    const r = known || { overlaps: new Map(), files: [] };
    try {
      r.session = await get(`/v1/sessions/${id}`);
      r.error = null;
      if (!LIVE.has(r.session.state)) {
        rows.delete(id);
        return;
      }
      const [tree, overlaps] = await Promise.all([
        get(`/v1/sessions/${id}/tree?only_modified=true&recursive=true`),
        // The overlaps found before the page followed this session.
        known ? null : getList(`/v1/sessions/${id}/events?type=overlap.detected`).catch(() => null)]);
      r.files = (tree.entries || []).filter((e) => e.type !== "dir" || e.status === "deleted");
      for (const ev of (overlaps && overlaps.events) || []) {
        if (ev.payload) r.overlaps.set(ev.payload.other + "\0" + ev.payload.path, ev.payload);
      }
    } catch (err) {
      if (!r.session) return;
      r.error = err;
    }
    rows.set(id, r);
  };
  // Each session refreshes at most once at a time; events that arrive
  // meanwhile ask for one more.
  const pending = new Map();
  const schedule = (id) => {
    if (pending.has(id)) { pending.set(id, true); return; }
    pending.set(id, false);
    (async () => {
      do {
        pending.set(id, false);
        await refresh(id);
        draw();
      } while (pending.get(id));
      pending.delete(id);
    })();
  };

  // The streams start first, so what happens while the list loads is
  // seen too.
  const ctl = new AbortController();
  for (const repo of repos) {
    stream(`/v1/repos/${encodeURIComponent(repo.name)}/events`, (ev) => {
      const id = ev.session || (ev.payload && ev.payload.session);
      if (!id) return;
      if (ev.type === "overlap.detected" && ev.payload) {
        const r = rows.get(id);
        if (r) {
          r.overlaps.set(ev.payload.other + "\0" + ev.payload.path, ev.payload);
          draw();
        } else schedule(id); // a session the page does not follow yet: its overlaps come with it
        return;
      }
      schedule(id);
    }, ctl.signal, "now");
  }
  const lists = await Promise.all([...LIVE].map((st) => get(`/v1/sessions?state=${st}`)));
  await Promise.all(lists.flatMap((l) => l.sessions || []).map((s) => refresh(s.id)));
  draw();
  if (!repos.length) status.textContent = "No repositories.";
  return root;
}
