// Links and short ids: every id or commit the page shows goes through
// here, so each is a link where the page has somewhere to go and a short
// id that never wraps (class "id", white-space: nowrap in style.css),
// with the whole id in its title.
import { h } from "./dom.js";

// shortText is an id as shown: a UUID's first group, a commit's first ten
// hex digits.
export function shortText(id) {
  if (!id) return "";
  const s = String(id);
  return /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(s) ? s.slice(0, 8) : s.slice(0, 10);
}

// shortId is an id shown short, whole in its title.
export function shortId(id, cls) {
  return h("code", { class: "id" + (cls ? " " + cls : ""), title: id }, shortText(id));
}

export function sessionHref(id) {
  return `/ui/sessions/${encodeURIComponent(id)}`;
}

export function changesetHref(id, revision) {
  return `/ui/changesets/${encodeURIComponent(id)}` + (revision ? `?revision=${revision}` : "");
}

// sessionLink links a session's page; text defaults to its short id.
export function sessionLink(id, text) {
  return h("a", { href: sessionHref(id), class: "session-link", dataset: { session: id } }, text || shortId(id));
}

// changesetLink links a changeset's page; text defaults to its short id.
export function changesetLink(id, text, revision) {
  return h("a", { href: changesetHref(id, revision), class: "changeset-link", dataset: { changeset: id } }, text || shortId(id));
}

// commitHref is the repository's commit view of a commit, from the
// daemon's --commit-url template ({repo} and {commit} replaced), or ""
// when none is configured. The template comes with the page (a meta
// element the daemon fills in), not from another site.
export function commitHref(repo, oid) {
  const meta = document.querySelector('meta[name="sessiond-commit-url"]');
  const tpl = meta ? meta.getAttribute("content") : "";
  if (!tpl || !oid) return "";
  return tpl.replaceAll("{repo}", encodeURIComponent(repo)).replaceAll("{commit}", encodeURIComponent(oid));
}

// commitLink is a commit as a short id, linked to the repository's
// commit view when one is configured.
export function commitLink(repo, oid) {
  if (!oid) return null;
  const code = shortId(oid, "oid");
  const href = commitHref(repo, oid);
  return href ? h("a", { href, class: "commit-link", rel: "noopener noreferrer", dataset: { commit: oid } }, code) : code;
}

// cutList renders items (already elements) in a list element cut after
// limit, with a "show all" button that shows the rest in place. A page
// that draws the list again keeps it whole with opts.shown (true once
// opts.onShowAll was called).
export function cutList(tag, attrs, items, limit = 20, opts = {}) {
  if (opts.shown) limit = items.length;
  const list = h(tag, attrs, items.slice(0, limit));
  if (items.length <= limit) return list;
  const more = h("button", { type: "button", class: "link show-all", "aria-label": `Show all ${items.length}` }, `show all ${items.length}`);
  more.addEventListener("click", () => {
    list.append(...items.slice(limit));
    more.remove();
    if (opts.onShowAll) opts.onShowAll();
  });
  return h("div", { class: "cut", dataset: { total: items.length, shown: limit } }, list, more);
}
