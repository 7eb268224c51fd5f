// The history of a changeset (GET /v1/changesets/{id}/timeline): each
// revision after the checkpoints that led to it, reviews each followed by
// its line comments, the accept and the undo, oldest first, with links to
// the revisions, the session's checkpoints and the commits.
import { get, stream } from "./api.js";
import { h, clear, age, badge, errorBox } from "./dom.js";
import { shortId, commitLink, sessionHref, changesetHref } from "./links.js";

const VERBS = { approve: "approved", request_changes: "requested changes", reject: "rejected", comment: "commented" };

const FOLLOW = ["checkpoint.created", "changeset.submitted", "changeset.updated", "changeset.reviewed", "changeset.accepted", "changeset.undone"];

// timelineSection returns the section at once and fills it when the
// timeline arrives; it follows the session's events (where the token may)
// and loads the timeline again as things happen, until the page drops
// the section.
export function timelineSection(cs) {
  const body = h("div", { class: "muted" }, "Loading the history…");
  const root = h("section", { id: "timeline", "aria-labelledby": "timeline-title" }, h("h2", { id: "timeline-title" }, "History"), body);
  let loads = 0;
  const load = () => get(`/v1/changesets/${encodeURIComponent(cs.id)}/timeline`).then((tl) => {
    clear(body, renderTimeline(cs, tl));
    body.className = "";
    root.dataset.ready = "true";
    root.dataset.loads = String(++loads);
  }, (err) => clear(body, errorBox(err)));
  load();
  const ctl = new AbortController();
  stream(`/v1/sessions/${encodeURIComponent(cs.session)}/events?type=${FOLLOW.join(",")}`, () => {
    if (!root.isConnected) { ctl.abort(); return; } // the page drew a new one
    load();
  }, ctl.signal, "now");
  return root;
}

function when(at) {
  return h("time", { datetime: at, title: at }, age(at));
}

function entry(cs, tl, e, i) {
  // A paragraph (a review's or comment's body) comes after the time.
  const li = (...parts) => {
    const body = parts.filter((p) => p instanceof HTMLParagraphElement);
    return h("li", { class: "tl-entry tl-" + e.kind, dataset: { kind: e.kind, revision: e.revision || "" }, id: `tl-${i}` },
      h("span", { class: "tl-kind" }, e.kind), " ", parts.filter((p) => !body.includes(p)), " ", h("span", { class: "muted" }, when(e.at)), body);
  };
  switch (e.kind) {
    case "checkpoint":
      return li(h("a", { href: sessionHref(tl.session) + `#checkpoint-${e.checkpoint}` }, `Checkpoint ${e.checkpoint}`),
        e.label ? [" ", h("q", {}, e.label)] : null, " ", commitLink(tl.repo, e.commit), h("span", { class: "muted" }, ` at mutation ${e.seq}`));
    case "revision":
      return li(h("a", { href: changesetHref(cs.id, e.revision), class: "revision-link" }, `Revision ${e.revision}`),
        e.revision === 1 ? " submitted" : " submitted again", ", head ", commitLink(tl.repo, e.commit));
    case "review": {
      const r = e.review;
      return li(badge(r.verdict), " ", h("strong", {}, r.author || "(no name)"), ` ${VERBS[r.verdict] || r.verdict} on revision ${r.revision}`,
        r.body ? h("p", { class: "tl-body" }, r.body) : null);
    }
    case "comment":
      return li(h("strong", {}, e.review.author || "(no name)"), " on ", h("code", {}, `${e.comment.path}:${e.comment.line}`),
        ` (revision ${e.revision})`, h("p", { class: "tl-body" }, e.comment.body));
    case "accepted":
      return li(`Revision ${e.revision} accepted as `, commitLink(tl.repo, e.commit), " on ",
        h("a", { href: `/ui/repos/${encodeURIComponent(tl.repo)}/layers?branch=${encodeURIComponent(cs.target_branch)}` }, cs.target_branch));
    case "undone":
      return li("Undone by ", commitLink(tl.repo, e.commit));
    default:
      return li(e.kind);
  }
}

function renderTimeline(cs, tl) {
  const list = tl.entries || [];
  if (!list.length) return h("p", { class: "muted" }, "Nothing yet.");
  return [h("p", { class: "muted" }, "Session ", h("a", { href: sessionHref(tl.session) }, shortId(tl.session))),
    h("ol", { class: "timeline" }, list.map((e, i) => entry(cs, tl, e, i)))];
}
