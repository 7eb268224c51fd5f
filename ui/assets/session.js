// One session (/ui/sessions/{id}): what it is, its changesets, its
// unresolved conflicts (each hunk's three sides), overlap warnings, its
// running services (with links that open their ports), the
// command it ran last, its checkpoints and its mutations
// (op, paths, when; a command with its argv and exit code), kept current
// by the session's event stream.
import { get, getList, post, stream, token, askToken, readEvents } from "./api.js";
import { h, clear, age, badge, errorBox, agentLabel } from "./dom.js";
import { shortId, commitLink, sessionLink, changesetLink, cutList } from "./links.js";

const PAGE = 1000; // mutations per request (the route's default)
const MAX_MUTATIONS = 20000; // the page reads at most this many
const ROWS = 100; // mutation rows shown before "show all"

function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

function decoded(s) {
  try { return decodeURIComponent(s); } catch { return s; }
}

function when(at) {
  return h("time", { datetime: at, title: at }, age(at));
}

// argvText is an argv as one line a reader can copy.
function argvText(argv) {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(" ");
}

async function allMutations(id) {
  const out = [];
  let after = 0;
  while (out.length < MAX_MUTATIONS) {
    const page = (await get(`/v1/sessions/${id}/mutations?after=${after}&limit=${PAGE}`)).mutations || [];
    out.push(...page);
    if (page.length < PAGE) break;
    after = page[page.length - 1].seq;
  }
  return out;
}

export async function sessionPage(sid) {
  const id = encodeURIComponent(sid);
  const root = h("section", { class: "session-page", dataset: { session: sid } });
  const parts = {
    meta: h("div", { id: "session-meta" }),
    conflicts: h("section", { id: "session-conflicts", "aria-live": "polite" }),
    overlaps: h("div", { id: "session-overlaps", "aria-live": "polite" }),
    live: h("section", { id: "exec-live", "aria-labelledby": "exec-live-title", "aria-live": "polite", dataset: { state: "idle" } },
      h("h2", { id: "exec-live-title" }, "Running now"), h("p", { class: "muted" }, "No command is running.")),
    services: h("section", { id: "services", "aria-labelledby": "services-title" }),
    exec: h("section", { id: "exec-latest", "aria-labelledby": "exec-title", "aria-live": "polite" }),
    checkpoints: h("section", { id: "checkpoints", "aria-labelledby": "checkpoints-title" }),
    mutations: h("section", { id: "mutations", "aria-labelledby": "mutations-title" }),
  };
  const overlaps = new Map();

  const renderOverlaps = () => {
    clear(parts.overlaps, overlaps.size ? [h("h2", {}, "Overlap warnings"), h("ul", { class: "warnings" }, [...overlaps.values()].map((o) =>
      h("li", { class: "overlap" }, h("code", {}, o.path), " is also changed by session ", sessionLink(o.other),
        o.other_agent ? ` (${o.other_agent})` : "",
        o.merge === "conflict" ? " — their versions conflict" : o.merge === "clean" ? " — their versions merge cleanly" : "")))] : null);
  };

  // mark marks the checkpoint the URL's fragment names (and scrolls to
  // it when asked): a link from a changeset's history names a row drawn
  // after the browser looked for it, and reloads draw it again.
  const mark = (scroll) => {
    const target = location.hash.length > 1 && parts.checkpoints.querySelector("#" + CSS.escape(decoded(location.hash.slice(1))));
    for (const el of parts.checkpoints.querySelectorAll(".targeted")) if (el !== target) el.classList.remove("targeted");
    if (!target) return;
    target.classList.add("targeted");
    if (scroll) requestAnimationFrame(() => target.scrollIntoView({ block: "center" }));
  };

  const load = async () => {
    const [s, cps, muts, css, rs, svcs, kept] = await Promise.all([
      get(`/v1/sessions/${id}`),
      get(`/v1/sessions/${id}/checkpoints`),
      allMutations(id),
      get(`/v1/changesets?session=${id}`).catch(() => ({ changesets: [] })),
      get(`/v1/sessions/${id}/runs`),
      // The admin's: a reviewer's token lists no services.
      get(`/v1/sessions/${id}/services`).catch(() => ({ services: [] })),
      get(`/v1/sessions/${id}/conflicts`).catch(() => ({ conflicts: [] }))]);
    renderConflicts(parts.conflicts, kept.conflicts || []);
    document.title = `Session ${sid.slice(0, 10)} · sessiond`;
    const changesets = css.changesets || [];
    clear(parts.meta,
      h("p", { class: "crumbs" }, h("a", { href: "/ui/sessions" }, "Sessions"), " / ", s.repo),
      h("h1", {}, "Session ", shortId(s.id), s.intent ? ` · ${s.intent}` : ""),
      h("dl", { class: "meta" },
        h("dt", {}, "State"), h("dd", { id: "session-state" }, badge(s.state)),
        h("dt", {}, "Agent"), h("dd", {}, agentLabel(s.agent_id, s.agent_name) || "—"),
        h("dt", {}, "Repository"), h("dd", {}, s.repo),
        h("dt", {}, "Base"), h("dd", {}, commitLink(s.repo, s.base_commit), s.base_ref ? ` (${s.base_ref})` : ""),
        s.parent ? [h("dt", {}, "Forked from"), h("dd", {}, sessionLink(s.parent))] : null,
        h("dt", {}, "Mutations"), h("dd", {}, String(s.seq)),
        h("dt", {}, "Changesets"), h("dd", { id: "session-changesets" }, changesets.length ?
          h("ul", { class: "paths" }, changesets.map((c) => h("li", {}, changesetLink(c.id, c.intent || undefined), " ", badge(c.status),
            h("span", { class: "muted" }, ` revision ${c.revision}`), c.accepted_commit ? [" → ", commitLink(c.repo, c.accepted_commit)] : null))) : "none"),
        h("dt", {}, "Started"), h("dd", {}, when(s.created_at), ", last active ", when(s.last_active_at))));

    // Running services, each port opened by a signed link in a new tab
    // (no opener: the page there cannot reach this one).
    const up = (svcs.services || []).filter((v) => v.state === "running" || v.state === "starting");
    clear(parts.services, up.length ? [h("h2", { id: "services-title" }, `Services (${up.length})`),
      h("ul", { class: "checks services" }, up.map((v) => h("li", { class: "service", dataset: { name: v.name } },
        h("strong", {}, v.name), " ", badge(v.state), " ", h("code", { class: "argv" }, argvText(v.argv)),
        v.port ? [" ", h("span", { class: "muted" }, `port ${v.port} `),
          h("a", { class: "service-link", href: v.preview_url || v.url, target: "_blank", rel: "noopener noreferrer",
            onclick: async (ev) => {
              ev.preventDefault();
              try {
                const l = await post(`/v1/sessions/${id}/ports/${v.port}/link`, { ttl_seconds: 3600 });
                window.open(l.url, "_blank", "noopener,noreferrer");
              } catch (err) { ev.target.after(errorBox(err)); }
            } }, "open")] : null,
        h("span", { class: "muted" }, " started ", when(v.started)))))] : null);

    // Every command, a command that changed no file too (the mutation
    // log has only those that did), newest first.
    const runs = (rs.runs || []).slice().reverse();
    const last = runs[0];
    const exitBadge = (code) => h("span", { class: "exit-code badge " + (code === 0 ? "check-passed" : "check-failed") }, `exit ${code}`);
    clear(parts.exec, h("h2", { id: "exec-title" }, "Latest command"),
      last ? h("div", { class: "exec " + (last.exit_code === 0 ? "exec-ok" : "exec-failed"), dataset: { exitCode: last.exit_code, seq: last.seq } },
        h("code", { class: "argv" }, argvText(last.argv)), " ", exitBadge(last.exit_code),
        h("span", { class: "muted" }, ` ${duration(last.duration_ms)}, `, when(last.at), last.changed_files ? ", changed files" : ", changed no files"),
        last.output_tail ? h("pre", { class: "output" }, last.output_tail) : null) :
        h("p", { class: "muted" }, "The session ran no command."),
      runs.length > 1 ? [h("h3", {}, `Commands (${runs.length})`), cutList("ul", { class: "checks runs" }, runs.map((r) =>
        h("li", { class: "run", dataset: { exitCode: r.exit_code } }, h("code", { class: "argv" }, argvText(r.argv)), " ", exitBadge(r.exit_code),
          h("span", { class: "muted" }, ` ${duration(r.duration_ms)}, `, when(r.at)),
          r.output_tail ? h("details", {}, h("summary", {}, "Output (its end)"), h("pre", { class: "output" }, r.output_tail)) : null)), 10)] : null);

    clear(parts.checkpoints, h("h2", { id: "checkpoints-title" }, `Checkpoints (${cps.checkpoints.length})`),
      cps.checkpoints.length ? h("table", { class: "list" },
        h("thead", {}, h("tr", {}, ["#", "Label", "Commit", "At mutation", "When"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, cps.checkpoints.map((c) => h("tr", { id: `checkpoint-${c.n}`, class: "checkpoint", dataset: { n: c.n } },
          h("td", { "data-label": "#" }, String(c.n)), h("td", { "data-label": "Label" }, c.label || ""),
          h("td", { "data-label": "Commit" }, commitLink(s.repo, c.commit)), h("td", { "data-label": "At mutation" }, String(c.seq)),
          h("td", { "data-label": "When" }, when(c.created_at)))))) : h("p", { class: "muted" }, "No checkpoints."));

    // Newest first; the oldest are behind "show all".
    const rows = muts.slice().reverse().map((m) => h("tr", { class: "mutation op-" + m.op, dataset: { seq: m.seq, op: m.op } },
      h("td", { "data-label": "Seq" }, String(m.seq)),
      h("td", { "data-label": "Op" }, m.op),
      h("td", { "data-label": "What" }, m.op === "service" && m.exec ? [h("span", {}, "service "), h("code", {}, m.exec.service), " "] : m.exec ? [h("code", { class: "argv" }, argvText(m.exec.argv)), " ",
        h("span", { class: "exit-code badge " + (m.exec.exit_code === 0 ? "check-passed" : "check-failed") }, `exit ${m.exec.exit_code}`)] : null,
      m.paths.length ? cutList("ul", { class: "paths" }, m.paths.map((p) => h("li", {}, h("code", {}, p))), 10) : null),
      h("td", { "data-label": "When" }, when(m.at))));
    const tbody = h("tbody", {}, rows.slice(0, ROWS));
    const more = rows.length > ROWS ? h("button", { type: "button", class: "link show-all", onclick: (ev) => { tbody.append(...rows.slice(ROWS)); ev.target.remove(); } },
      `show all ${rows.length}`) : null;
    clear(parts.mutations, h("h2", { id: "mutations-title" }, `Mutations (${muts.length}${muts.length >= MAX_MUTATIONS ? "+" : ""})`),
      muts.length ? [h("table", { class: "list mutations" },
        h("thead", {}, h("tr", {}, ["Seq", "Op", "What", "When"].map((c) => h("th", { scope: "col" }, c)))), tbody), more] :
        h("p", { class: "muted" }, "No mutations yet."));
    root.dataset.seq = s.seq;
    mark(false);
  };

  // Reloads run one at a time; events meanwhile ask for one more.
  let running = null, again = false;
  const reload = () => {
    if (running) { again = true; return; }
    running = (async () => {
      do {
        again = false;
        try { await load(); } catch (err) { clear(parts.meta, errorBox(err)); }
      } while (again);
      running = null;
    })();
  };

  // The stream starts first, so what happens while the page loads is
  // seen too.
  const ctl = new AbortController();
  stream(`/v1/sessions/${id}/events`, (ev) => {
    if (ev.type === "overlap.detected" && ev.payload) {
      overlaps.set(ev.payload.other + "\0" + ev.payload.path, ev.payload);
      renderOverlaps();
      return;
    }
    reload();
  }, ctl.signal, "now");
  // A command that changed no file appends no event: its end reloads.
  followCommands(sid, parts.live, ctl.signal, reload);
  await load();
  mark(true);
  window.addEventListener("hashchange", () => mark(true), { signal: ctl.signal });
  const old = await getList(`/v1/sessions/${id}/events?type=overlap.detected`).catch(() => null);
  for (const ev of (old && old.events) || []) if (ev.payload) overlaps.set(ev.payload.other + "\0" + ev.payload.path, ev.payload);
  renderOverlaps();
  return clear(root, parts.meta, parts.conflicts, parts.overlaps, parts.live, parts.services, parts.exec, parts.checkpoints, parts.mutations);
}

// renderConflicts shows the conflicts a rebase or merge kept in the
// session: each path, its kind, and each hunk's three sides (ours, the
// base, theirs), until its markers are gone or it is resolved.
function renderConflicts(box, conflicts) {
  if (!conflicts.length) { clear(box); return; }
  const side = (name, start, lines) => h("div", { class: "conflict-side side-" + name },
    h("div", { class: "muted" }, `${name}, from line ${start}`), h("pre", {}, (lines || []).join("") || "(nothing)"));
  clear(box, h("h2", {}, `Unresolved conflicts (${conflicts.length})`),
    h("p", { class: "muted" }, "Submit and accept wait until each is resolved: its markers removed, or marked resolved (sessiond resolve PATH)."),
    h("ul", { class: "warnings conflicts" }, conflicts.map((c) => h("li", { class: "conflict", dataset: { path: c.path, kind: c.kind } },
      h("code", {}, c.path), " ", badge(c.kind), " ", h("span", { class: "muted" }, c.message || ""),
      c.offered_resolution != null ? h("span", { class: "muted" }, " — a remembered resolution applies") : null,
      (c.hunks || []).map((hk) => h("div", { class: "conflict-hunk" },
        side("ours", hk.ours_start, hk.ours_lines), side("base", hk.base_start, hk.base_lines), side("theirs", hk.theirs_start, hk.theirs_lines)))))));
}

// followCommands shows the session's command running now, its output as
// it comes and its exit code (GET /v1/sessions/{id}/exec, Server-Sent
// Events: start, output, end), command after command, until signal
// aborts. The box's data-state is idle, running or ended.
async function followCommands(sid, box, signal, onEnd) {
  const title = box.firstChild;
  let out = null;
  const onEvent = (ev) => {
    if (ev.type === "start") {
      out = h("pre", { class: "output live-output" });
      box.dataset.state = "running";
      delete box.dataset.exitCode;
      clear(box, title, h("p", {}, h("code", { class: "argv" }, argvText(ev.argv)), " ", h("span", { class: "badge" }, "running"),
        h("span", { class: "muted" }, " since ", when(ev.at))), out);
    } else if (ev.type === "output" && out) {
      if (ev.dropped) out.append(`[… ${ev.dropped} earlier chunks not kept]\n`);
      out.append(ev.data);
    } else if (ev.type === "end") {
      box.dataset.state = "ended";
      box.dataset.exitCode = ev.exit_code;
      const badge = box.querySelector(".badge");
      if (badge) {
        badge.className = "exit-code badge " + (ev.exit_code === 0 ? "check-passed" : "check-failed");
        badge.textContent = ev.error ? "could not run" : `exit ${ev.exit_code}`;
      }
      if (ev.error && out) out.append(ev.error);
      onEnd();
    }
  };
  while (!signal.aborted) {
    try {
      const headers = { Accept: "text/event-stream" };
      if (token()) headers.Authorization = "Bearer " + token();
      const resp = await fetch(`/v1/sessions/${encodeURIComponent(sid)}/exec`, { headers, signal, credentials: "omit" });
      if (resp.status === 401) { await askToken(); continue; }
      if (!resp.ok) {
        box.dataset.state = "unavailable";
        clear(box, title, h("p", { class: "muted" }, `Running commands cannot be followed here (HTTP ${resp.status}).`));
        return;
      }
      box.dataset.following = "true";
      await readEvents(resp, onEvent);
    } catch (err) {
      if (signal.aborted) return;
      console.warn("following commands", err);
    }
    box.dataset.following = "";
    await new Promise((r) => setTimeout(r, 2000));
  }
}
