// One changeset: what it is, its revisions and files, the diff with line
// comments, the verdict form, warnings, the symbol summary, and accept
// (whole or per file and hunk) with a dry-run preview.
import { get, post, stream } from "./api.js";
import { h, clear, short, age, badge, errorBox, notice, agentLabel } from "./dom.js";
import { renderFile, statusLetter, partial } from "./diff.js";
import { checksSection } from "./checks.js";
import { timelineSection } from "./timeline.js";
import { sessionLink, commitLink } from "./links.js";

// layersHref is the layers page of a repository's branch (the
// repository's head branch when branch is empty).
export function layersHref(repo, branch) {
  return `/ui/repos/${encodeURIComponent(repo)}/layers` + (branch ? `?branch=${encodeURIComponent(branch)}` : "");
}

export async function changesetPage(id) {
  const page = new ChangesetPage(id);
  await page.load();
  return page.root;
}

class ChangesetPage {
  constructor(id) {
    this.id = id;
    this.mode = sessionStorage.getItem("sessiond.diffmode") || "unified";
    this.drafts = [];
    this.root = h("section", { class: "changeset" });
    this.overlaps = new Map();
    this.viewRev = Number(new URLSearchParams(location.search).get("revision")) || 0; // a timeline link names one
    this.opened = new Map(); // path → open or closed, as the reviewer chose
    this.sections = new Map(); // path → {section, setOpen}
  }

  async load() {
    const id = encodeURIComponent(this.id);
    const [cs, revs] = await Promise.all([get(`/v1/changesets/${id}`), get(`/v1/changesets/${id}/revisions`)]);
    this.cs = cs;
    this.revisions = revs.revisions || [];
    if (!this.viewRev) this.viewRev = cs.revision;
    await this.loadDiff();
    this.session = await get(`/v1/sessions/${encodeURIComponent(cs.session)}`).catch(() => null);
    document.title = `${cs.intent || "Changeset"} · sessiond`;
    this.render();
    if (!this.keys) {
      this.keys = (ev) => this.onKey(ev);
      document.addEventListener("keydown", this.keys);
      document.addEventListener("keyup", this.keys);
    }
    // For whoever measures the page (the browser tests): when the
    // changeset was first on screen, since the navigation started.
    if (!performance.getEntriesByName("sessiond.changeset.rendered").length) performance.mark("sessiond.changeset.rendered");
    this.refreshMerge();
    if (!this.streaming) this.follow();
  }

  // open reports whether the changeset is still under review.
  open() {
    return !["accepted", "undone", "rejected"].includes(this.cs.status);
  }

  // refreshMerge asks whether the current revision merges onto its
  // branch as the branch is now (a dry run of the merge, cached by the
  // daemon per head) and shows the answer.
  async refreshMerge() {
    if (!this.mergeBox) return;
    if (!this.open()) {
      clear(this.mergeBox);
      return;
    }
    try {
      const m = await get(`/v1/changesets/${encodeURIComponent(this.id)}/mergeability`);
      this.merge = m;
      const at = m.branch_head ? [" at ", commitLink(this.cs.repo, m.branch_head)] : " (a new branch)";
      clear(this.mergeBox, m.clean
        ? h("p", { class: "ok", dataset: { clean: "true", head: m.branch_head } }, "Merges cleanly onto ", h("strong", {}, m.branch), at,
          m.rebased ? " (the branch moved since the base; the accept merges onto it)." : ".")
        : h("div", { class: "error", dataset: { clean: "false", head: m.branch_head } },
          h("p", {}, "Conflicts with ", h("strong", {}, m.branch), at, ": accept would be refused until the session rebases."),
          h("ul", { class: "paths" }, m.conflicts.map((c) => h("li", {}, h("code", {}, c.path), ` (${c.kind})`)))));
    } catch (err) {
      clear(this.mergeBox, errorBox(err));
    }
  }

  async loadDiff() {
    const q = this.viewRev && this.viewRev !== this.cs.revision ? `revision=${this.viewRev}` : "";
    const id = encodeURIComponent(this.id);
    // A large changeset comes without syntax tokens (lexing every file
    // is most of the diff's cost); an opened file asks for its own.
    this.lazySpans = (this.cs.stats ? this.cs.stats.files : 0) > COLLAPSE_AT;
    const [diff, checks] = await Promise.all([get(`/v1/changesets/${id}/diff?format=json${q ? "&" + q : ""}${this.lazySpans ? "&spans=false" : ""}`),
      get(`/v1/changesets/${id}/checks${q ? "?" + q : ""}`).catch((err) => { console.warn("checks", err); return null; })]);
    this.diff = diff;
    this.checks = checks;
    this.resetSelection();
  }

  renderChecks() {
    if (!this.checksBox) return;
    clear(this.checksBox, checksSection(this.checks));
  }

  current() {
    return this.viewRev === this.cs.revision;
  }

  resetSelection() {
    this.sel = new Map(); // path → Set of hunk indexes, or "all"
    for (const f of this.diff.files) this.sel.set(f.path, "all");
  }

  // follow reads the session's events (from the start, then live) for
  // overlap warnings.
  follow() {
    this.streaming = new AbortController();
    // The branch moving (an accept or undo of any changeset) changes
    // whether this one merges: ask again. A token that may not follow
    // the repository (a reviewer's) gets the answer of the page's load.
    stream(`/v1/repos/${encodeURIComponent(this.cs.repo)}/events?type=changeset.accepted,changeset.undone`, (ev) => {
      if (ev.payload && ev.payload.target_branch && ev.payload.target_branch !== this.cs.target_branch) return;
      this.refreshMerge();
    }, this.streaming.signal, "now");
    // Only overlaps, from the session's start: the stream replays those,
    // not every write.
    stream(`/v1/sessions/${encodeURIComponent(this.cs.session)}/events?type=overlap.detected`, (ev) => {
      if (ev.type !== "overlap.detected" || !ev.payload) return;
      const p = ev.payload;
      this.overlaps.set(p.other + "\0" + p.path, p);
      this.renderWarnings();
    }, this.streaming.signal);
  }

  render() {
    const cs = this.cs;
    this.warnings = h("div", { id: "warnings", "aria-live": "polite" });
    this.checksBox = h("div", { id: "checks-box", "aria-live": "polite" });
    this.mergeBox = h("div", { id: "mergeability", "aria-live": "polite" });
    this.diffs = h("div", { id: "diffs" });
    this.fileList = h("div", { id: "files" });
    this.acceptBox = h("div", { id: "accept-result", "aria-live": "polite" });
    this.draftList = h("ul", { id: "drafts", class: "drafts" });
    const revPicker = h("select", { id: "revision", onchange: async (ev) => {
      this.viewRev = Number(ev.target.value);
      try {
        await this.loadDiff();
        this.renderChecks();
        this.renderFiles();
        this.renderDiffs();
      } catch (err) { notice(err); }
    } }, this.revisions.map((r) => h("option", { value: r.revision, selected: r.revision === this.viewRev },
      `Revision ${r.revision}${r.revision === cs.revision ? " (current)" : ""} · ${age(r.at)}`)));
    const modeRadios = h("fieldset", { class: "inline" }, h("legend", {}, "Diff view"),
      ["unified", "split"].map((m) => h("label", {}, h("input", { type: "radio", name: "diff-mode", value: m, checked: this.mode === m,
        onchange: () => { this.mode = m; sessionStorage.setItem("sessiond.diffmode", m); this.renderDiffs(); } }),
      m === "unified" ? " Unified" : " Side by side")));
    const agent = this.session ? agentLabel(this.session.agent_id, this.session.agent_name) : cs.agent_id;
    clear(this.root,
      h("p", { class: "crumbs" }, h("a", { href: "/ui/changesets" }, "Changesets"), " / ", cs.repo),
      h("h1", {}, cs.intent || "(no intent)"),
      h("dl", { class: "meta" },
        h("dt", {}, "Status"), h("dd", { id: "cs-status" }, badge(cs.status)),
        h("dt", {}, "Agent"), h("dd", {}, agent),
        h("dt", {}, "Session"), h("dd", {}, sessionLink(cs.session)),
        h("dt", {}, "Base → target"), h("dd", {}, commitLink(cs.repo, cs.base_commit), " → ",
          h("a", { href: layersHref(cs.repo, cs.target_branch) }, cs.target_branch)),
        h("dt", {}, h("label", { for: "revision" }, "Revision")), h("dd", {}, revPicker),
        h("dt", {}, "Changes"), h("dd", {}, cs.stats ? `${cs.stats.files} files, +${cs.stats.insertions} −${cs.stats.deletions}` : ""),
        cs.accepted_commit ? [h("dt", {}, "Accepted as"), h("dd", {}, commitLink(cs.repo, cs.accepted_commit))] : null,
        cs.selection ? [h("dt", {}, "Left out"), h("dd", { id: "left-out" }, describeSelection(cs.selection.left_out))] : null),
      this.checksBox,
      this.mergeBox,
      this.warnings,
      symbols(cs.symbols),
      h("h2", {}, "Files"), this.fileList,
      h("div", { class: "diff-controls" }, modeRadios,
        h("p", { class: "muted keys" }, "Keys: ", h("kbd", {}, "j"), "/", h("kbd", {}, "k"), " next or previous file, ",
          h("kbd", {}, "n"), "/", h("kbd", {}, "p"), " next or previous hunk, ", h("kbd", {}, "c"), " comment on the focused line.")),
      this.diffs,
      ["accepted", "undone", "rejected"].includes(cs.status) ? this.outcome() : this.reviewForm(),
      this.acceptForm(),
      reviewsList(cs.reviews || []),
      timelineSection(cs));
    this.renderChecks();
    this.renderWarnings();
    this.renderFiles();
    this.renderDiffs();
    this.renderDrafts();
  }

  renderWarnings() {
    if (!this.warnings) return;
    const items = [];
    for (const o of this.overlaps.values()) {
      items.push(h("li", { class: "overlap" }, "Overlap: ", h("code", {}, o.path), " is also changed by session ",
        sessionLink(o.other), o.other_agent ? ` (${o.other_agent})` : "",
        o.symbols && o.symbols.length ? `, same symbols: ${o.symbols.map((k) => k.name).join(", ")}` : "",
        o.merge === "conflict" ? " — their versions conflict" : o.merge === "clean" ? " — their versions merge cleanly" : ""));
    }
    for (const s of this.staleReads || []) {
      items.push(h("li", { class: "stale" }, "Stale read: ", h("code", {}, s.path), ` changed on ${this.cs.target_branch} since the session read it`));
    }
    clear(this.warnings, items.length ? [h("h2", {}, "Warnings"), h("ul", { class: "warnings" }, items)] : null);
  }

  fileState(f) {
    const s = this.sel.get(f.path);
    if (s === "all") return "all";
    if (!s || s.size === 0) return "none";
    return s.size === f.hunks.length ? "all" : "some";
  }

  // renderFiles is the file tree: the files under a row per directory,
  // each with its accept checkbox and its "viewed" mark.
  renderFiles() {
    const canAccept = this.current() && !["accepted", "undone", "rejected"].includes(this.cs.status);
    const cols = canAccept ? 6 : 5;
    const rows = [];
    let dir = null;
    this.diff.files.forEach((f, i) => {
      const slash = f.path.lastIndexOf("/");
      const d = slash < 0 ? "" : f.path.slice(0, slash + 1);
      if (d !== dir) {
        dir = d;
        if (d) rows.push(h("tr", { class: "dir" }, h("td", { colspan: cols }, h("span", { class: "dir-name" }, d))));
      }
      const state = this.fileState(f);
      const box = canAccept ? h("input", { type: "checkbox", class: "file-check", id: `file-${i}`, "data-path": f.path, checked: state !== "none",
        onchange: (ev) => { this.sel.set(f.path, ev.target.checked ? "all" : new Set()); this.syncFile(f); } }) : null;
      if (box && state === "some") box.indeterminate = true;
      rows.push(h("tr", { class: "file-row" + (d ? " in-dir" : ""), "data-path": f.path },
        canAccept ? h("td", {}, box, h("label", { for: `file-${i}`, class: "sr-only" }, `Accept ${f.path}`)) : null,
        h("td", { class: "status-letter", title: f.status }, h("abbr", { title: f.status }, statusLetter(f.status))),
        h("td", { class: "path" }, h("a", { href: `#diff-${i}`, title: f.path, onclick: (ev) => { ev.preventDefault(); this.openFile(f, true); } }, slash < 0 ? f.path : f.path.slice(slash + 1)),
          f.old_path && f.old_path !== f.path ? h("span", { class: "muted" }, ` from ${f.old_path}`) : null),
        h("td", { class: "num add" }, `+${f.insertions}`), h("td", { class: "num del" }, `−${f.deletions}`),
        h("td", {}, this.viewedBox(f, `viewed-f-${i}`))));
    });
    this.viewedCount = h("span", { id: "viewed-count", class: "muted" });
    clear(this.fileList, this.diff.files.length ? [this.viewedCount, h("table", { class: "files tree" },
      h("thead", {}, h("tr", {}, canAccept ? h("th", { scope: "col" }, "Accept") : null, h("th", { scope: "col" }, "Status"),
        h("th", { scope: "col" }, "Path"), h("th", { scope: "col" }, "Added"), h("th", { scope: "col" }, "Removed"), h("th", { scope: "col" }, "Viewed"))),
      h("tbody", {}, rows))] : h("p", {}, "No changes."));
    this.syncViewedCount();
  }

  // Viewed marks live in the tab's sessionStorage, per changeset: path →
  // the version of the file that was viewed (its blob at the head, or at
  // the base for a deletion), so a new revision that changes the file
  // clears its mark and one that does not keeps it.
  viewedKey() {
    return `sessiond.viewed.${this.id}`;
  }

  viewedMarks() {
    try {
      return JSON.parse(sessionStorage.getItem(this.viewedKey()) || "{}") || {};
    } catch {
      return {};
    }
  }

  isViewed(f) {
    return this.viewedMarks()[f.path] === fileVersion(f);
  }

  setViewed(f, on) {
    const marks = this.viewedMarks();
    if (on) marks[f.path] = fileVersion(f);
    else delete marks[f.path];
    sessionStorage.setItem(this.viewedKey(), JSON.stringify(marks));
    for (const box of this.root.querySelectorAll(`input.viewed-check[data-path="${CSS.escape(f.path)}"]`)) box.checked = on;
    // A file marked viewed folds away; unmarked, it opens again.
    this.opened.set(f.path, !on);
    this.sections.get(f.path)?.setOpen(!on);
    this.syncViewedCount();
  }

  viewedBox(f, id) {
    return h("label", { class: "viewed" }, h("input", { type: "checkbox", class: "viewed-check", id, "data-path": f.path, checked: this.isViewed(f),
      onchange: (ev) => this.setViewed(f, ev.target.checked) }), h("span", { class: "sr-only" }, `${f.path} `), h("span", { class: "viewed-text" }, " Viewed"));
  }

  syncViewedCount() {
    if (!this.viewedCount) return;
    const marks = this.viewedMarks();
    const n = this.diff.files.filter((f) => marks[f.path] === fileVersion(f)).length;
    const total = this.diff.files.length;
    this.viewedCount.textContent = `${n} of ${total} file${total === 1 ? "" : "s"} viewed`;
  }

  // syncFile shows one file's selection on its checkboxes (the file's in
  // the list, its hunks' in its diff) in place: a click renders nothing
  // again, so the other diffs, scroll and focus stay as they are.
  syncFile(f) {
    const state = this.fileState(f);
    const sel = this.sel.get(f.path);
    const path = CSS.escape(f.path);
    for (const box of this.fileList.querySelectorAll(`input.file-check[data-path="${path}"]`)) {
      box.checked = state !== "none";
      box.indeterminate = state === "some";
    }
    for (const box of this.diffs.querySelectorAll(`input.hunk-check[data-path="${path}"]`)) {
      box.checked = sel === "all" || (sel instanceof Set && sel.has(Number(box.dataset.hunk)));
    }
  }

  comments(path) {
    const out = [];
    for (const r of this.cs.reviews || []) {
      for (const c of r.comments || []) {
        if (c.path === path) out.push({ line: c.line, body: c.body, author: r.author, revision: r.revision });
      }
    }
    for (const d of this.drafts) if (d.path === path) out.push({ ...d, draft: true });
    return out;
  }

  // renderDiffs lays out one section per file; a file's diff is built
  // only while it is open. Past COLLAPSE_AT files every file starts
  // folded, so a large changeset costs its headers, not its diffs; a
  // file marked viewed starts folded too.
  renderDiffs() {
    const many = this.diff.files.length > COLLAPSE_AT;
    this.sections = new Map();
    const secs = this.diff.files.map((f, i) => this.fileSection(f, i, many));
    clear(this.diffs, many ? h("p", { id: "collapsed-note", class: "muted" },
      `${this.diff.files.length} files: each diff opens with its ▸ button (or j/k to move between files, Enter to open).`) : null, secs);
  }

  fileSection(f, i, many) {
    const canAccept = this.current() && !["accepted", "undone", "rejected"].includes(this.cs.status);
    const body = h("div", { class: "file-body", id: `diff-body-${i}` });
    const toggle = h("button", { type: "button", class: "toggle", "aria-controls": `diff-body-${i}`, "aria-label": `Show or hide the diff of ${f.path}` });
    const sec = h("section", { class: "file", id: `diff-${i}`, "data-path": f.path, "aria-labelledby": `diff-title-${i}` },
      h("h3", { id: `diff-title-${i}` }, toggle, " ", h("abbr", { title: f.status }, statusLetter(f.status)), " ", f.path,
        h("span", { class: "muted" }, ` +${f.insertions} −${f.deletions}`), " ", this.viewedBox(f, `viewed-d-${i}`)),
      body);
    const setOpen = (open) => {
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "▾" : "▸";
      sec.classList.toggle("open", open);
      if (!open) {
        clear(body);
        return;
      }
      if (body.firstChild) return;
      if (this.lazySpans && !f.spansLoaded) {
        body.append(h("p", { class: "muted loading" }, "Loading…"));
        this.loadSpans(f).finally(() => {
          f.spansLoaded = true;
          if (sec.classList.contains("open")) { clear(body); setOpen(true); }
        });
        return;
      }
      const hunks = canAccept && partial(f) ? {
        checked: (k) => { const s = this.sel.get(f.path); return s === "all" || (s && s.has(k)); },
        onChange: (k, on) => {
          let s = this.sel.get(f.path);
          s = s === "all" ? new Set(f.hunks.map((_, j) => j)) : new Set(s || []);
          if (on) s.add(k); else s.delete(k);
          this.sel.set(f.path, s.size === f.hunks.length ? "all" : s);
          this.syncFile(f);
        },
      } : null;
      clear(body, renderFile(f, { mode: this.mode, key: i, comments: this.comments(f.path), hunks,
        onComment: (line, row) => this.openComment(f.path, line, row),
        expand: (from, to) => this.lines(f.path, from, to) }));
    };
    toggle.addEventListener("click", () => {
      const open = !sec.classList.contains("open");
      this.opened.set(f.path, open);
      setOpen(open);
    });
    this.sections.set(f.path, { section: sec, setOpen });
    const chosen = this.opened.get(f.path);
    setOpen(chosen !== undefined ? chosen : !many && !this.isViewed(f));
    return sec;
  }

  // onKey is the page's keyboard: j/k the next or previous file, n/p
  // the next or previous hunk of the open diffs (the focus goes to its
  // first changed line), c a comment on the focused line. Keys typed in
  // a text field, or with a modifier, are the field's.
  onKey(ev) {
    if (!this.root.isConnected) {
      document.removeEventListener("keydown", this.keys);
      document.removeEventListener("keyup", this.keys);
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
    const t = ev.target;
    if (t instanceof Element && (t.isContentEditable || t.closest("textarea, select, dialog") ||
      (t.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(t.type)))) return;
    // c opens the comment form when the key comes up, so the letter
    // does not land in the form's text.
    if (ev.key === "c") {
      ev.preventDefault();
      if (ev.type === "keyup") this.commentFocused();
      return;
    }
    const act = { j: () => this.moveFile(1), k: () => this.moveFile(-1), n: () => this.moveHunk(1), p: () => this.moveHunk(-1) }[ev.key];
    if (!act || ev.type !== "keydown") return;
    ev.preventDefault();
    act();
  }

  // currentFile is the index of the file the focus is in, else the one
  // j/k last moved to.
  currentFile() {
    const sec = document.activeElement && document.activeElement.closest && document.activeElement.closest("#diffs section.file");
    if (sec) return this.diff.files.findIndex((f) => f.path === sec.dataset.path);
    return this.cur ?? -1;
  }

  moveFile(step) {
    const n = this.diff.files.length;
    if (!n) return;
    const cur = this.currentFile();
    const next = cur < 0 ? (step > 0 ? 0 : n - 1) : Math.min(n - 1, Math.max(0, cur + step));
    this.cur = next;
    for (const s of this.diffs.querySelectorAll("section.file.current")) s.classList.remove("current");
    const s = this.sections.get(this.diff.files[next].path);
    s.section.classList.add("current");
    s.section.scrollIntoView({ block: "start" });
    s.section.querySelector("button.toggle").focus({ preventScroll: true });
  }

  moveHunk(step) {
    const headers = [...this.diffs.querySelectorAll("tr.hunk-header")];
    if (!headers.length) return;
    const at = document.activeElement;
    let idx = -1;
    if (at && this.diffs.contains(at)) {
      headers.forEach((hd, i) => { if (hd === at || hd.contains(at) || (hd.compareDocumentPosition(at) & Node.DOCUMENT_POSITION_FOLLOWING)) idx = i; });
    } else if (this.cur !== undefined && this.diff.files[this.cur]) {
      // From the file j/k chose: before its first hunk.
      const sec = this.sections.get(this.diff.files[this.cur].path).section;
      headers.forEach((hd, i) => { if (sec.compareDocumentPosition(hd) & Node.DOCUMENT_POSITION_PRECEDING) idx = i; });
    }
    const next = idx < 0 ? (step > 0 ? 0 : headers.length - 1) : Math.min(headers.length - 1, Math.max(0, idx + step));
    const hd = headers[next];
    // The hunk's first changed line, else its first line.
    let target = null, first = null;
    for (let tr = hd.nextElementSibling; tr && !tr.classList.contains("hunk-header") && !tr.classList.contains("expand-row"); tr = tr.nextElementSibling) {
      const btn = tr.querySelector("button.ln-btn");
      if (!btn) continue;
      first = first || btn;
      if (tr.querySelector("td.code.add, td.code.del")) { target = btn; break; }
    }
    target = target || first;
    const sec = hd.closest("section.file");
    this.cur = this.diff.files.findIndex((f) => f.path === sec.dataset.path);
    for (const s of this.diffs.querySelectorAll("section.file.current")) s.classList.remove("current");
    sec.classList.add("current");
    (target || hd).scrollIntoView({ block: "center" });
    if (target) target.focus({ preventScroll: true });
  }

  // commentFocused opens the comment form of the focused line (its
  // number's button, or the line the focus is in).
  commentFocused() {
    const at = document.activeElement;
    if (!at || !this.diffs.contains(at)) return;
    const btn = at.matches("button.ln-btn") ? at : at.closest("tr.line")?.querySelector("button.ln-btn");
    if (btn) btn.click();
  }

  // loadSpans fetches one file's diff with its syntax tokens and takes
  // its hunks (the same hunks, with spans); without them the file is
  // shown plain.
  async loadSpans(f) {
    const rev = this.viewRev && this.viewRev !== this.cs.revision ? `&revision=${this.viewRev}` : "";
    try {
      const d = await get(`/v1/changesets/${encodeURIComponent(this.id)}/diff?format=json&path=${encodeURIComponent(f.path)}${rev}`);
      const g = (d.files || []).find((x) => x.path === f.path);
      if (g && g.hunks.length === f.hunks.length) f.hunks = g.hunks;
    } catch (err) {
      console.warn("spans", f.path, err);
    }
  }

  // openFile opens a file's diff and, with scroll, brings it into view
  // with the focus on its toggle.
  openFile(f, scroll) {
    const s = this.sections.get(f.path);
    if (!s) return;
    this.opened.set(f.path, true);
    s.setOpen(true);
    if (scroll) {
      s.section.scrollIntoView({ block: "start" });
      s.section.querySelector("button.toggle").focus({ preventScroll: true });
    }
  }

  // lines loads lines from-to of path at the shown revision's head.
  lines(path, from, to) {
    const p = path.split("/").map(encodeURIComponent).join("/");
    return get(`/v1/changesets/${encodeURIComponent(this.id)}/files/${p}?side=head&lines=${from}-${to}&revision=${this.viewRev}`);
  }

  openComment(path, line, row) {
    const old = document.getElementById("comment-form");
    if (old) old.closest("tr").remove();
    const cols = row.children.length;
    const ta = h("textarea", { id: "comment-body", rows: 3, required: true });
    const form = h("form", { id: "comment-form", class: "comment-form" },
      h("label", { for: "comment-body" }, `Comment on line ${line} of ${path}`), ta,
      h("div", { class: "buttons" },
        h("button", { type: "submit" }, "Add comment"),
        h("button", { type: "button", onclick: () => { tr.remove(); row.querySelector("button")?.focus(); } }, "Cancel")));
    const tr = h("tr", { class: "comment-row" }, h("td", { colspan: cols }, form));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (!ta.value.trim()) return;
      this.drafts.push({ path, line, body: ta.value.trim() });
      this.renderDiffs();
      this.renderDrafts();
      document.getElementById("verdict-body")?.focus();
    });
    form.addEventListener("keydown", (ev) => { if (ev.key === "Escape") tr.remove(); });
    row.after(tr);
    ta.focus();
  }

  renderDrafts() {
    clear(this.draftList, this.drafts.map((d, i) => h("li", {}, h("code", {}, `${d.path}:${d.line}`), " ", d.body, " ",
      h("button", { type: "button", class: "link", "aria-label": `Remove the comment on ${d.path} line ${d.line}`,
        onclick: () => { this.drafts.splice(i, 1); this.renderDrafts(); this.renderDiffs(); } }, "remove"))));
  }

  reviewForm() {
    const out = h("div", { id: "review-result", "aria-live": "polite" });
    const verdicts = [["approve", "Approve"], ["request_changes", "Request changes"], ["reject", "Reject"], ["comment", "Comment only"]];
    const form = h("form", { id: "review-form", class: "panel", "aria-labelledby": "review-title" },
      h("h2", { id: "review-title" }, "Review"),
      h("fieldset", {}, h("legend", {}, "Verdict"), verdicts.map(([v, label], i) =>
        h("label", { class: "radio" }, h("input", { type: "radio", name: "verdict", value: v, id: `verdict-${v}`, checked: i === 3 }), " ", label))),
      h("label", { for: "verdict-body" }, "Message"), h("textarea", { id: "verdict-body", name: "body", rows: 3 }),
      h("label", { for: "verdict-author" }, "Your name (with the admin token only, where the review then counts as a comment; a reviewer token names you)"),
      h("input", { id: "verdict-author", name: "author", value: sessionStorage.getItem("sessiond.author") || "reviewer" }),
      h("h3", {}, "Line comments to send"), this.draftList,
      h("p", { class: "muted" }, "Press a line number in the diff to comment on that line."),
      h("div", { class: "buttons" }, h("button", { type: "submit", id: "review-submit" }, "Send review")), out);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const fd = new FormData(form);
      sessionStorage.setItem("sessiond.author", fd.get("author"));
      try {
        const res = await post(`/v1/changesets/${encodeURIComponent(this.id)}/reviews`, {
          verdict: fd.get("verdict"), body: fd.get("body"), author: fd.get("author"), comments: this.drafts,
        });
        this.drafts = [];
        this.cs = res.changeset;
        await this.load();
        const o = document.getElementById("review-result");
        const asked = fd.get("verdict");
        clear(o, h("p", { class: "ok" }, `Review recorded as ${authorText(res.review)}: ${res.review.verdict.replace(/_/g, " ")}; the changeset is ${res.changeset.status.replace(/_/g, " ")}.`),
          res.review.verdict !== asked ? h("p", { class: "muted", id: "review-counted" },
            `Counted as a comment, not ${asked.replace(/_/g, " ")}: a name given with the admin token is vouched for by nothing. Review with a reviewer token to vote.`) : null);
        document.getElementById("review-result")?.focus();
      } catch (err) {
        clear(out, errorBox(err));
      }
    });
    return form;
  }

  // outcome says how a changeset that is no longer under review ended,
  // where the review form was.
  outcome() {
    const cs = this.cs;
    const parts = [];
    if (cs.status === "accepted" || cs.status === "undone") {
      parts.push(h("p", {}, "Accepted as ", commitLink(cs.repo, cs.accepted_commit), " on ",
        h("a", { href: layersHref(cs.repo, cs.target_branch) }, cs.target_branch),
        cs.status === "undone" ? ", then undone (see the branch's layers)." : "."));
      if (cs.selection) parts.push(h("p", {}, "Left out, still in the session: ", describeSelection(cs.selection.left_out)));
    } else {
      const rejects = (cs.reviews || []).filter((r) => r.verdict === "reject" && r.revision === cs.revision);
      const last = rejects[rejects.length - 1];
      parts.push(h("p", {}, `Rejected on revision ${cs.revision}`, last ? [" by ", h("strong", {}, authorText(last)), last.body ? `: ${last.body}` : "."] : "."),
        h("p", { class: "muted" }, "A new revision from its session reopens it for review."));
    }
    return h("section", { id: "outcome", class: "panel outcome-" + cs.status, "aria-labelledby": "outcome-title" },
      h("h2", { id: "outcome-title" }, "Outcome ", badge(cs.status)), parts);
  }

  // selection is the accept's select, or undefined for everything.
  selection() {
    const files = [], hunks = {};
    let all = true;
    for (const f of this.diff.files) {
      const st = this.fileState(f);
      if (st === "all") files.push(f.path);
      else {
        all = false;
        if (st === "some") hunks[f.path] = [...this.sel.get(f.path)].sort((a, b) => a - b);
      }
    }
    return all ? undefined : { files, hunks };
  }

  acceptForm() {
    const out = this.acceptBox;
    const msg = h("input", { id: "accept-message", name: "message", placeholder: "the intent" });
    const run = async (dry) => {
      const body = { message: msg.value || undefined, actor: document.getElementById("verdict-author")?.value || undefined,
        dry_run: dry || undefined, revision: this.cs.revision };
      const sel = this.selection();
      if (sel) body.select = sel;
      clear(out, h("p", {}, dry ? "Computing the preview…" : "Accepting…"));
      try {
        const res = await post(`/v1/changesets/${encodeURIComponent(this.id)}/accept`, body);
        this.staleReads = res.stale_reads || [];
        this.renderWarnings();
        if (dry) {
          clear(out, h("div", { id: "preview" }, h("h3", {}, "Preview: the commit would be"),
            h("p", {}, `On ${res.branch} at `, commitLink(this.cs.repo, res.head), res.rebased ? " (merged onto the moved branch)" : "",
              sel ? " — only the selected changes" : " — the whole changeset"),
            (res.diff.files || []).map((f, i) => h("section", { class: "file" }, h("h4", {}, statusLetter(f.status), " ", f.path),
              renderFile(f, { mode: this.mode, key: "p" + i })))));
          return;
        }
        await this.load();
        clear(this.acceptBox, h("div", { id: "accept-done", class: "ok" },
          h("p", {}, "Accepted as ", h("span", { id: "accepted-commit" }, commitLink(this.cs.repo, res.commit)), ` on ${res.branch}`, res.rebased ? " (merged onto the moved branch)." : "."),
          res.selection ? h("p", {}, "Left out, still in the session: ", describeSelection(res.selection.left_out),
            res.session_rebased ? " (the session now holds just that)." : "") : null,
          res.session_conflicts ? h("p", { class: "error" }, "The session could not be rebased: ", res.session_conflicts.map((c) => c.path).join(", ")) : null,
          h("p", {}, h("a", { href: layersHref(this.cs.repo, res.branch) }, "See the branch's layers"))));
      } catch (err) {
        const parts = [errorBox(err)];
        const d = err.details || {};
        if (d.conflicts) parts.push(conflictsTable(d.conflicts));
        if (d.stale_reads) { this.staleReads = d.stale_reads; this.renderWarnings(); }
        if (err.code === "checks_required" && d.checks) {
          parts.push(h("ul", { id: "checks-required", class: "warnings" }, d.checks.map((c) => h("li", {},
            h("code", {}, c.argv.join(" ")), ` is ${c.state}`))));
        }
        clear(out, parts);
      }
    };
    const closed = ["accepted", "undone"].includes(this.cs.status);
    return h("form", { id: "accept-form", class: "panel", "aria-labelledby": "accept-title", onsubmit: (ev) => { ev.preventDefault(); run(false); } },
      h("h2", { id: "accept-title" }, "Accept"),
      closed ? h("p", {}, `This changeset is ${this.cs.status}.`) : [
        h("p", { class: "muted" }, "Untick files or hunks above to accept only part; what is left out stays in the session."),
        h("label", { for: "accept-message" }, "Commit message"), msg,
        h("div", { class: "buttons" },
          h("button", { type: "button", id: "accept-preview", onclick: () => run(true) }, "Preview (dry run)"),
          h("button", { type: "submit", id: "accept-submit" }, "Accept"))],
      out);
  }
}

// COLLAPSE_AT is the number of files past which every diff starts
// folded.
export const COLLAPSE_AT = 50;

// fileVersion is what a viewed mark remembers of a file: its status and
// its blob at the head (at the base for a deletion).
function fileVersion(f) {
  return `${f.status}:${f.new_oid || f.old_oid || ""}`;
}

function describeSelection(s) {
  if (!s) return "nothing";
  const parts = [...(s.files || [])];
  for (const [p, hs] of Object.entries(s.hunks || {})) parts.push(`${p} (hunk ${hs.map((i) => i + 1).join(", ")})`);
  return parts.length ? parts.join(", ") : "nothing";
}

function symbols(list) {
  if (!list || !list.length) return null;
  const keys = (ks) => (ks || []).map((k) => (k.receiver ? `${k.receiver}.` : "") + k.name).join(", ");
  return h("section", { id: "symbols" }, h("h2", {}, "Symbols"),
    h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["File", "Added", "Modified", "Removed"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, list.map((f) => h("tr", {}, h("td", { "data-label": "File" }, h("code", {}, f.path)),
        h("td", { "data-label": "Added" }, keys(f.added)), h("td", { "data-label": "Modified" }, keys(f.modified)),
        h("td", { "data-label": "Removed" }, f.parse_error ? `(${f.parse_error})` : keys(f.removed)))))));
}

export function conflictsTable(cs) {
  return h("table", { class: "list conflicts" }, h("caption", {}, "Conflicts"),
    h("thead", {}, h("tr", {}, ["Path", "Kind", "What"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, cs.map((c) => h("tr", {}, h("td", {}, h("code", {}, c.path)), h("td", {}, c.kind), h("td", {}, c.message || "")))));
}

// kindText says who vouches for a review's author.
function kindText(r) {
  return { reviewer: " (reviewer token)", local: " (local user)", asserted: " (named with the admin token)", session: " (its own session)" }[r.author_kind] || "";
}

function authorText(r) {
  return (r.author || "(no name)") + kindText(r);
}

function reviewsList(reviews) {
  if (!reviews.length) return h("section", { id: "reviews" }, h("h2", {}, "Reviews"), h("p", {}, "No reviews yet."));
  return h("section", { id: "reviews" }, h("h2", {}, "Reviews"), h("ol", {}, reviews.map((r) => h("li", {},
    badge(r.verdict), " ", h("strong", {}, r.author || "(no name)"), h("span", { class: "muted" }, `${kindText(r)} on revision ${r.revision}, ${age(r.created_at)}`),
    r.body ? h("p", {}, r.body) : null,
    r.comments.length ? h("ul", {}, r.comments.map((c) => h("li", {}, h("code", {}, `${c.path}:${c.line}`), " ", c.body))) : null))));
}
