// The changesets list: filter by repository and status.
import { get } from "./api.js";
import { h, clear, age, badge, errorBox } from "./dom.js";
import { checkBadge } from "./checks.js";
import { sessionLink } from "./links.js";

const STATUSES = ["", "open", "approved", "changes_requested", "rejected", "accepted", "undone"];

export async function changesetsPage() {
  document.title = "Changesets · sessiond";
  const params = new URLSearchParams(location.search);
  // A reviewer token lists changesets but not repositories: the filter
  // then takes a name typed in the query only.
  const repos = (await get("/v1/repos").catch((err) => {
    if (err.status === 403) return {};
    throw err;
  })).repos || [];
  const repoSel = h("select", { id: "filter-repo", name: "repo" },
    h("option", { value: "" }, "all"),
    repos.map((r) => h("option", { value: r.name, selected: params.get("repo") === r.name }, r.name)));
  const statusSel = h("select", { id: "filter-status", name: "status" },
    STATUSES.map((s) => h("option", { value: s, selected: (params.get("status") || "") === s }, s ? s.replace(/_/g, " ") : "all")));
  const results = h("div", { id: "changesets", "aria-live": "polite" });
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter changesets" },
    h("label", { for: "filter-repo" }, "Repository"), repoSel,
    h("label", { for: "filter-status" }, "Status"), statusSel,
    h("button", { type: "submit" }, "Filter"));
  const load = async () => {
    const q = new URLSearchParams();
    if (repoSel.value) q.set("repo", repoSel.value);
    if (statusSel.value) q.set("status", statusSel.value);
    history.replaceState(null, "", "/ui/changesets" + (q.toString() ? "?" + q : ""));
    try {
      const list = ((await get("/v1/changesets?" + q)).changesets || []).reverse();
      clear(results, list.length ? table(list) : h("p", {}, "No changesets."));
    } catch (err) {
      clear(results, errorBox(err));
    }
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  repoSel.addEventListener("change", load);
  statusSel.addEventListener("change", load);
  await load();
  const layerLinks = repos.map((r) => h("li", {}, h("a", { href: `/ui/repos/${encodeURIComponent(r.name)}/layers` }, r.name)));
  return h("section", {},
    h("h1", {}, "Changesets"), form, results,
    repos.length ? h("nav", { "aria-label": "Layers", class: "aside" }, h("h2", {}, "Layers (time machine)"), h("ul", {}, layerLinks)) : null);
}

function table(list) {
  return h("table", { class: "list" },
    h("caption", { class: "sr-only" }, "Changesets, newest first"),
    h("thead", {}, h("tr", {},
      ["Intent", "Repository", "Agent", "Target", "Revision", "Status", "Checks", "Age", "Approvals"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, list.map((c) => h("tr", {},
      h("td", { "data-label": "Intent" }, h("a", { href: "/ui/changesets/" + c.id, class: "cs-link" }, c.intent || "(no intent)")),
      h("td", { "data-label": "Repository" }, c.repo),
      h("td", { "data-label": "Agent" }, c.agent_id, " ", h("span", { class: "muted" }, "session "), sessionLink(c.session)),
      h("td", { "data-label": "Target" }, h("a", { href: `/ui/repos/${encodeURIComponent(c.repo)}/layers?branch=${encodeURIComponent(c.target_branch)}` }, c.target_branch)),
      h("td", { "data-label": "Revision" }, String(c.revision)),
      h("td", { "data-label": "Status" }, badge(c.status)),
      h("td", { "data-label": "Checks", class: "checks-cell" }, checkBadge(c.checks)),
      h("td", { "data-label": "Age" }, h("time", { datetime: c.created_at, title: c.created_at }, age(c.created_at))),
      h("td", { "data-label": "Approvals" }, String(c.approvals ?? 0))))));
}
