// Checks: the commands a changeset's session ran on the revision shown
// (GET /v1/changesets/{id}/checks), shown at the top as a reviewer reads
// CI status, and the badge a changeset has in the list.
import { h, age } from "./dom.js";

const WORDS = { passed: "passed", failed: "failed", stale: "stale", missing: "missing", none: "no checks" };

// checkBadge is the summary of a revision's checks (ChecksResponse.state).
export function checkBadge(state) {
  if (!state) return null;
  return h("span", { class: "badge check check-" + state, title: stateTitle(state) }, WORDS[state] || state);
}

function stateTitle(state) {
  return {
    passed: "Every command the session ran on these files passed",
    failed: "A command the session ran on these files failed",
    stale: "The files changed after a command ran",
    missing: "A required check never ran",
    none: "The session ran no command",
  }[state] || state;
}

function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// checksSection renders the checks of one revision.
export function checksSection(res) {
  const list = (res && res.checks) || [];
  return h("section", { id: "checks", "aria-labelledby": "checks-title", dataset: { state: res ? res.state : "" } },
    h("h2", { id: "checks-title" }, "Checks ", res ? checkBadge(res.state) : null),
    !res ? h("p", { class: "muted" }, "The checks could not be loaded.") :
      !list.length ? h("p", { class: "muted" }, "The session ran no command on this revision's files.") :
        h("ul", { class: "checks" }, list.map((c) => h("li", { class: "check-item check-" + c.state, dataset: { state: c.state, argv: JSON.stringify(c.argv) } },
          h("div", {}, checkBadge(c.state), " ", h("code", { class: "argv" }, c.argv.join(" ")),
            c.required ? h("span", { class: "muted" }, " (required)") : null),
          c.state === "missing" ? h("div", { class: "muted" }, "Never ran; the repository requires it to pass before accept.") :
            h("div", { class: "muted" }, `exit ${c.exit_code}, ${duration(c.duration_ms)}, `,
              h("time", { datetime: c.at, title: c.at }, age(c.at)),
              c.state === "stale" ? " — the files changed after it ran" : "",
              c.changed_files ? " — it changed files itself" : ""),
          c.output_tail ? h("details", {}, h("summary", {}, "Output (its end)"), h("pre", { class: "output" }, c.output_tail)) : null))));
}
