// Small DOM helpers: h builds elements, text is always set as text (never
// as HTML), so nothing from the API is ever parsed as markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function short(oid) {
  return oid ? oid.slice(0, 10) : "";
}

export function age(at) {
  const s = Math.max(0, (Date.now() - new Date(at).getTime()) / 1000);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function badge(status) {
  return h("span", { class: "badge badge-" + status }, status.replace(/_/g, " "));
}

// notice shows an error (with the API's message and code) or a note in
// the page's alert region.
export function notice(err) {
  const el = document.getElementById("notice");
  if (!err) {
    clear(el);
    return;
  }
  const msg = err.message || String(err);
  const code = err.code ? ` (${err.code})` : "";
  clear(el, h("div", { class: "error" }, h("strong", {}, "Error: "), msg + code,
    h("button", { type: "button", class: "link", onclick: () => clear(el), "aria-label": "Dismiss the error" }, "×")));
}

// errorBox is an inline error near the control that caused it.
export function errorBox(err) {
  const code = err.code ? ` (${err.code})` : "";
  return h("p", { class: "error", role: "alert" }, (err.message || String(err)) + code);
}

// agentLabel is how an agent is shown, as the CLI shows it: its name, and
// its id in parentheses when that differs (one alone is both).
export function agentLabel(id, name) {
  const i = id || name || "", n = name || id || "";
  return i === n ? n : `${n} (${i})`;
}
