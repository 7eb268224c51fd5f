// Routes the page on its path; every page is index.html.
import { notice, h, clear } from "./dom.js";
import { token } from "./api.js";
import { changesetsPage } from "./changesets.js";
import { changesetPage } from "./changeset.js";
import { layersPage } from "./layers.js";
import { sessionsPage } from "./sessions.js";

function route() {
  const path = decodeURI(location.pathname).replace(/\/+$/, "");
  let m;
  if (path === "/ui" || path === "/ui/changesets") return ["changesets", () => changesetsPage()];
  if ((m = path.match(/^\/ui\/changesets\/([^/]+)$/))) return ["changesets", () => changesetPage(m[1])];
  if ((m = location.pathname.match(/^\/ui\/repos\/([^/]+)\/layers\/?$/)))
    return ["layers", () => layersPage(decodeURIComponent(m[1]), new URLSearchParams(location.search).get("branch") || "")];
  if (path === "/ui/sessions") return ["sessions", () => sessionsPage()];
  return ["", () => {
    document.title = "Not found · sessiond";
    return h("section", {}, h("h1", {}, "Not found"), h("p", {}, "No page at ", location.pathname, ". ", h("a", { href: "/ui/" }, "Changesets")));
  }];
}

async function main() {
  const tb = document.getElementById("token-button");
  tb.hidden = !token();
  tb.addEventListener("click", () => {
    sessionStorage.removeItem("sessiond.token");
    location.reload();
  });
  const [nav, page] = route();
  for (const a of document.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
  }
  const mainEl = document.getElementById("main");
  try {
    clear(mainEl, await page());
  } catch (err) {
    notice(err);
    clear(mainEl, h("p", {}, "The page could not be loaded."));
  }
  document.body.dataset.ready = "true";
}

main();
