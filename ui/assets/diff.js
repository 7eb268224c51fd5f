// Renders one file of a JSON diff (GET …/diff?format=json) as rows of a
// table, unified or side by side. Line numbers of the new file are
// buttons that open a comment form for that line; comments already made
// are shown under their line. With hunk selection on, each hunk header
// has a checkbox.
import { h } from "./dom.js";

// EXPAND_STEP is how many lines one "expand" loads.
export const EXPAND_STEP = 20;

const STATUS_LETTER = { added: "A", modified: "M", deleted: "D", renamed: "R", copied: "C", mode_changed: "M", type_changed: "T" };

export function statusLetter(status) {
  return STATUS_LETTER[status] || "?";
}

// partial reports whether a file can be accepted hunk by hunk (the rule of
// the accept API: text files modified in place).
export function partial(f) {
  return f.status === "modified" && !f.binary && f.old_mode !== "120000" && f.new_mode !== "120000" &&
    f.old_mode !== "160000" && f.new_mode !== "160000" && f.hunks.length > 0;
}

function text(line) {
  let t = line.slice(1);
  let eof = false;
  if (t.endsWith("\n")) t = t.slice(0, -1);
  else eof = true;
  return [t, eof];
}

// code is a line's cell. The sign and the end-of-file mark are drawn by
// the stylesheet (::before and ::after), so what is copied or read as
// text is the line alone; its syntax tokens (spans from the server,
// characters counted in code points) are spans with classes, built as
// text like everything else.
function code(line, cls, spans) {
  const [t, eof] = text(line);
  return h("td", { class: "code " + cls, dataset: { sign: line[0] === " " ? " " : line[0] } },
    h("span", { class: "src" + (eof ? " no-eol" : ""), title: eof ? "No newline at end of file" : null }, tokens(t, spans)));
}

// tokens splits a line's text at its spans.
export function tokens(t, spans) {
  if (!spans || !spans.length) return [t];
  const chars = /[^\x00-\x7f]/.test(t) ? Array.from(t) : null;
  const cut = (a, b) => chars ? chars.slice(a, b).join("") : t.slice(a, b);
  const out = [];
  let at = 0;
  for (const s of spans) {
    if (s.start < at || s.end <= s.start) continue;
    if (s.start > at) out.push(cut(at, s.start));
    out.push(h("span", { class: `hl hl-${s.class.slice(0, 1)} hl-${s.class}` }, cut(s.start, s.end)));
    at = s.end;
  }
  const n = chars ? chars.length : t.length;
  if (at < n) out.push(cut(at, n));
  return out;
}

// rows walks a hunk: each entry {kind: ' '|'-'|'+', line, old, new}.
function rows(hunk) {
  let o = hunk.old_start, n = hunk.new_start;
  if (hunk.old_lines === 0) o++;
  if (hunk.new_lines === 0) n++;
  const out = [];
  hunk.lines.forEach((line, j) => {
    const k = line[0], spans = hunk.spans ? hunk.spans[j] : null;
    if (k === " ") out.push({ kind: k, line, spans, old: o++, new: n++ });
    else if (k === "-") out.push({ kind: k, line, spans, old: o++ });
    else out.push({ kind: k, line, spans, new: n++ });
  });
  return out;
}

// renderFile returns the table of one file's diff.
//   opts.mode: "unified" | "split"
//   opts.comments: [{line, body, author, revision, draft}] for this file
//   opts.onComment(line, anchorRow): a line's comment button was pressed
//   opts.hunks: null, or {checked(i) → bool, onChange(i, checked)}
//   opts.expand(from, to): loads lines from-to of the head's file
//     (a FileLines answer); without it no "expand" buttons
export function renderFile(f, opts) {
  const split = opts.mode === "split";
  const cols = split ? 4 : 3;
  const byLine = new Map();
  for (const c of opts.comments || []) {
    if (!byLine.has(c.line)) byLine.set(c.line, []);
    byLine.get(c.line).push(c);
  }
  const commentable = f.status !== "deleted";
  const lnButton = (n, side) => {
    if (n === undefined) return h("td", { class: "ln" });
    if ((side === "new") !== commentable) return h("td", { class: "ln" }, String(n));
    return h("td", { class: "ln" }, h("button", {
      type: "button", class: "ln-btn", "data-line": n, "data-path": f.path,
      "aria-label": `Comment on line ${n} of ${f.path}`,
      onclick: (ev) => opts.onComment && opts.onComment(n, ev.currentTarget.closest("tr")),
    }, String(n)));
  };
  const commentRows = (n) => (byLine.get(n) || []).map((c) => h("tr", { class: "comment-row" + (c.draft ? " draft" : "") },
    h("td", { colspan: cols }, h("div", { class: "comment", "data-line": n },
      h("strong", {}, c.draft ? "Draft" : (c.author || "(no name)")),
      c.revision ? h("span", { class: "muted" }, ` on revision ${c.revision}`) : null,
      `: `, c.body))));
  // ctxRows are the rows of a context line r {line, spans, old, new}.
  const ctxRows = (r, extra) => split
    ? [h("tr", { class: "line ctx" + extra, "data-new": r.new, "data-old": r.old }, lnButton(r.old, "old"), code(r.line, "ctx", r.spans), lnButton(r.new, "new"), code(r.line, "ctx", r.spans)),
      commentRows(r.new)]
    : [h("tr", { class: "line ctx" + extra, "data-new": r.new, "data-old": r.old }, lnButton(r.old, "old"), lnButton(r.new, "new"), code(r.line, "ctx", r.spans)),
      commentRows(r.new)];
  const body = [];
  // The unchanged lines between hunks (new side numbers; the old side is
  // the same text shifted) can be expanded from the head's file.
  const expandable = opts.expand && (f.status === "modified" || f.status === "renamed") && !f.binary && f.hunks.length > 0;
  const first = (hk) => hk.new_lines ? hk.new_start : hk.new_start + 1;
  const shift = (hk) => (hk.old_lines ? hk.old_start : hk.old_start + 1) - first(hk);
  const gapRow = (g) => {
    // g: {from, to (Infinity: the end of the file, not known yet), above (the hunk below, or null), below (the hunk above, or null)}
    const row = h("tr", { class: "expand-row", "data-from": g.from, "data-to": g.to === Infinity ? "" : g.to });
    const load = async (dir, btn) => {
      const n = EXPAND_STEP;
      const from = dir === "up" ? Math.max(g.from, g.to - n + 1) : g.from;
      const to = dir === "up" ? g.to : g.from + n - 1;
      btn.disabled = true;
      try {
        const res = await opts.expand(from, to);
        const k = dir === "up" ? shift(g.above) : shift(g.below);
        const rs = res.lines.map((line, j) => ctxRows({ line: " " + line, spans: res.spans ? res.spans[j] : null, new: res.start + j, old: res.start + j + k }, " expanded"));
        if (dir === "up") { row.after(...rs.flat()); g.to = res.start - 1; }
        else { row.before(...rs.flat()); g.from = res.end + 1; if (res.end >= res.total) g.to = res.total; }
        if (g.to === Infinity && res.total) g.to = res.total;
        if (g.from > g.to) row.remove();
        else { row.dataset.from = g.from; row.dataset.to = g.to === Infinity ? "" : g.to; }
      } catch (err) {
        if (err.status === 400 && g.to === Infinity) { row.remove(); return; } // the file ended there
        row.lastChild.append(h("span", { class: "error" }, " " + (err.message || String(err))));
      } finally { btn.disabled = false; }
    };
    const btn = (dir, label) => {
      const b = h("button", { type: "button", class: "link expand", "data-dir": dir, "data-path": f.path,
        onclick: (ev) => load(dir, ev.currentTarget) }, label);
      return b;
    };
    row.append(h("td", { colspan: cols, class: "expand-cell" },
      g.below ? btn("down", "↓ Expand below") : null, g.below && g.above ? " " : null,
      g.above ? btn("up", "↑ Expand above") : null));
    return row;
  };
  f.hunks.forEach((hunk, i) => {
    if (expandable) {
      const prev = i ? f.hunks[i - 1] : null;
      const g = { from: prev ? first(prev) + prev.new_lines : 1, to: first(hunk) - 1, above: hunk, below: prev };
      if (g.from <= g.to) body.push(gapRow(g));
    }
    const header = `@@ -${hunk.old_start},${hunk.old_lines} +${hunk.new_start},${hunk.new_lines} @@` + (hunk.function ? ` ${hunk.function}` : "");
    const box = opts.hunks ? h("input", {
      type: "checkbox", class: "hunk-check", id: `hunk-${opts.key}-${i}`, "data-hunk": i, "data-path": f.path,
      checked: opts.hunks.checked(i), onchange: (ev) => opts.hunks.onChange(i, ev.target.checked),
    }) : null;
    body.push(h("tr", { class: "hunk-header" }, h("td", { colspan: cols },
      box, box ? h("label", { for: box.id }, `Accept hunk ${i + 1} `) : null, h("code", {}, header))));
    const rs = rows(hunk);
    if (!split) {
      for (const r of rs) {
        const cls = r.kind === "+" ? "add" : r.kind === "-" ? "del" : "ctx";
        const tr = h("tr", { class: "line " + cls, "data-new": r.new, "data-old": r.old },
          lnButton(r.old, "old"), lnButton(r.new, "new"), code(r.line, cls, r.spans));
        body.push(tr, commentRows(commentable ? r.new : r.old));
      }
      return;
    }
    for (let j = 0; j < rs.length;) {
      if (rs[j].kind === " ") {
        const r = rs[j++];
        body.push(h("tr", { class: "line ctx", "data-new": r.new }, lnButton(r.old, "old"), code(r.line, "ctx", r.spans), lnButton(r.new, "new"), code(r.line, "ctx", r.spans)),
          commentRows(r.new));
        continue;
      }
      const dels = [], adds = [];
      while (j < rs.length && rs[j].kind === "-") dels.push(rs[j++]);
      while (j < rs.length && rs[j].kind === "+") adds.push(rs[j++]);
      for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
        const d = dels[k], a = adds[k];
        body.push(h("tr", { class: "line", "data-new": a && a.new },
          d ? lnButton(d.old, "old") : h("td", { class: "ln" }), d ? code(d.line, "del", d.spans) : h("td", { class: "code empty" }),
          a ? lnButton(a.new, "new") : h("td", { class: "ln" }), a ? code(a.line, "add", a.spans) : h("td", { class: "code empty" })),
          commentRows(commentable ? (a && a.new) : (d && d.old)));
      }
    }
  });
  // After the last hunk: its trailing context is git's 3 lines unless
  // the file ends there.
  const last = f.hunks[f.hunks.length - 1];
  let trailing = 0;
  for (let j = last ? last.lines.length - 1 : -1; j >= 0 && last.lines[j][0] === " "; j--) trailing++;
  if (expandable && trailing >= 3 && last.lines[last.lines.length - 1].endsWith("\n")) {
    body.push(gapRow({ from: first(last) + last.new_lines, to: Infinity, above: null, below: last }));
  }
  if (f.binary) body.push(h("tr", {}, h("td", { colspan: cols, class: "muted" }, "Binary file")));
  else if (!f.hunks.length) body.push(h("tr", {}, h("td", { colspan: cols, class: "muted" },
    f.status === "renamed" ? `Renamed from ${f.old_path} without changes` : f.old_mode !== f.new_mode ? `Mode ${f.old_mode} → ${f.new_mode}` : "No content changes")));
  return h("table", { class: "diff " + (split ? "split" : "unified"), "aria-label": `Diff of ${f.path}` },
    h("colgroup", {}, split ? [h("col", { class: "ln" }), h("col"), h("col", { class: "ln" }), h("col")] : [h("col", { class: "ln" }), h("col", { class: "ln" }), h("col")]),
    h("tbody", {}, body));
}
