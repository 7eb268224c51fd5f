// The time machine: a branch's accepted layers, newest first; choosing
// one previews its undo (what comes back, what stays, conflicts), then
// undoes it.
import { get, post } from "./api.js";
import { h, clear, short, age, badge, errorBox } from "./dom.js";
import { conflictsTable } from "./changeset.js";
import { commitLink, changesetLink } from "./links.js";

export async function layersPage(repo, branch) {
  document.title = `Layers of ${repo} · sessiond`;
  const r = encodeURIComponent(repo);
  const branches = (await get(`/v1/repos/${r}/branches`)).branches || [];
  if (!branch) {
    const info = await get(`/v1/repos/${r}`).catch(() => ({}));
    branch = info.head_branch || (branches[0] && branches[0].name) || "main";
  }
  const root = h("section", { class: "layers" });
  const list = h("div", { id: "layers" });
  const preview = h("div", { id: "undo-preview", "aria-live": "polite", tabindex: "-1" });
  const pick = h("select", { id: "branch", onchange: (ev) => { location.search = "?branch=" + encodeURIComponent(ev.target.value); } },
    branches.map((b) => h("option", { value: b.name, selected: b.name === branch }, b.name)));
  const load = async () => {
    // A layer's changeset is accepted or undone: two listings name every
    // layer's intent, however many layers there are.
    const [listed, accepted, undone] = await Promise.all([
      get(`/v1/repos/${r}/layers?branch=${encodeURIComponent(branch)}`),
      get(`/v1/changesets?repo=${r}&status=accepted`).catch(() => ({})),
      get(`/v1/changesets?repo=${r}&status=undone`).catch(() => ({}))]);
    const layers = listed.layers || [];
    const intentOf = new Map([...(accepted.changesets || []), ...(undone.changesets || [])].map((c) => [c.id, c.intent]));
    const intents = layers.map((l) => intentOf.get(l.changeset) || "");
    clear(list, layers.length ? h("ol", { class: "layers-list", reversed: true }, layers.map((l, i) => h("li", { class: "layer layer-" + l.state },
      h("div", {}, changesetLink(l.changeset, intents[i] || undefined), " ", badge(l.state)),
      h("div", { class: "muted" }, "commit ", commitLink(repo, l.commit), `, accepted ${age(l.accepted_at)}`,
        l.undone_at ? [", undone by ", commitLink(repo, l.revert_commit)] : null),
      l.state === "accepted" ? h("button", { type: "button", class: "undo-preview", "data-changeset": l.changeset,
        "aria-label": `Preview undoing ${intents[i] || l.changeset}`, onclick: () => showPreview(l, intents[i]) }, "Preview undo") : null))) :
      h("p", {}, `No layers on ${branch} yet.`));
  };
  const showPreview = async (l, intent) => {
    clear(preview, h("p", {}, "Computing what the undo would do…"));
    try {
      const res = await post(`/v1/changesets/${l.changeset}/undo`, { dry_run: true });
      const paths = (ps) => ps.length ? h("ul", {}, ps.map((p) => h("li", {}, h("code", {}, p)))) : h("p", { class: "muted" }, "none");
      clear(preview, h("h2", {}, `Undo “${intent || short(l.changeset)}”`),
        h("p", {}, "On ", h("code", {}, res.branch), " at ", commitLink(repo, res.head), ", nothing is written until you undo."),
        h("h3", {}, "Comes back (as before the layer)"), h("div", { id: "comes-back" }, paths(res.comes_back)),
        h("h3", {}, "Stays (later layers changed it too)"), h("div", { id: "stays" }, paths(res.stays)),
        res.conflicts.length ? conflictsTable(res.conflicts) : h("p", { id: "no-conflicts" }, "No conflicts."),
        res.conflicts.length ? null : h("button", { type: "button", id: "undo-confirm", onclick: () => undo(l) }, "Undo this layer"));
      preview.focus();
    } catch (err) {
      clear(preview, errorBox(err), err.details && err.details.conflicts ? conflictsTable(err.details.conflicts) : null);
    }
  };
  const undo = async (l) => {
    try {
      const res = await post(`/v1/changesets/${l.changeset}/undo`, {});
      clear(preview, h("p", { id: "undo-done", class: "ok" }, "Undone: ", h("code", {}, res.branch), " is now at ", commitLink(repo, res.commit), "."));
      await load();
    } catch (err) {
      clear(preview, errorBox(err), err.details && err.details.conflicts ? conflictsTable(err.details.conflicts) : null);
    }
  };
  await load();
  return clear(root,
    h("p", { class: "crumbs" }, h("a", { href: "/ui/changesets?repo=" + r }, "Changesets"), " / ", repo),
    h("h1", {}, `Layers of ${repo}`),
    h("p", {}, h("label", { for: "branch" }, "Branch "), pick),
    h("div", { class: "two" }, list, preview));
}
