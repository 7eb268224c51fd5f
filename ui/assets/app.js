// Routes the page on its path; every page is index.html.
import { notice, h, clear } from "./dom.js";
import { token } from "./api.js";
import { changesetsPage } from "./changesets.js";
import { changesetPage } from "./changeset.js";
import { layersPage } from "./layers.js";
import { sessionsPage } from "./sessions.js";
import { sessionPage } from "./session.js";

// decoded is a URL's path as text, or null when an escape in it is
// malformed (decodeURI throws URIError).
function decoded(s, decode) {
  try {
    return decode(s);
  } catch {
    return null;
  }
}

function notFound() {
  document.title = "Not found · sessiond";
  return h("section", {}, h("h1", {}, "Not found"), h("p", {}, "No page at ", location.pathname, ". ", h("a", { href: "/ui/" }, "Changesets")));
}

function route() {
  const path = (decoded(location.pathname, decodeURI) ?? "\0").replace(/\/+$/, "");
  let m;
  if (path === "/ui" || path === "/ui/changesets") return ["changesets", () => changesetsPage()];
  if ((m = path.match(/^\/ui\/changesets\/([^/]+)$/))) return ["changesets", () => changesetPage(m[1])];
  if ((m = location.pathname.match(/^\/ui\/repos\/([^/]+)\/layers\/?$/))) {
    const repo = decoded(m[1], decodeURIComponent);
    if (repo !== null) return ["layers", () => layersPage(repo, new URLSearchParams(location.search).get("branch") || "")];
  }
  if (path === "/ui/sessions") return ["sessions", () => sessionsPage()];
  if ((m = path.match(/^\/ui\/sessions\/([^/]+)$/))) return ["sessions", () => sessionPage(m[1])];
  return ["", notFound];
}

async function main() {
  const tb = document.getElementById("token-button");
  tb.hidden = !token();
  tb.addEventListener("click", () => {
    sessionStorage.removeItem("sessiond.token");
    location.reload();
  });
  const mainEl = document.getElementById("main");
  try {
    const [nav, page] = route();
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
    }
    clear(mainEl, await page());
  } catch (err) {
    notice(err);
    clear(mainEl, h("p", {}, "The page could not be loaded."));
  }
  document.body.dataset.ready = "true";
}

main();
