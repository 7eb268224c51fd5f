// The page's one door to the daemon: API v1 over fetch, with a token (the
// admin's or a reviewer's, asked for once, kept in sessionStorage for this
// tab) as a bearer token. No cookies are used. Requests are same-origin:
// the daemon refuses other origins and POST bodies that are not JSON.

const TOKEN_KEY = "sessiond.token";

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || "";
    this.details = e;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

let asking = null;

// askToken shows the token dialog once, however many requests wait on it.
export function askToken() {
  if (asking) return asking;
  const dialog = document.getElementById("token-dialog");
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  asking = new Promise((resolve) => {
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      input.value = "";
      dialog.close();
      asking = null;
      document.getElementById("token-button").hidden = false;
      resolve();
    }, { once: true });
  });
  dialog.showModal();
  input.focus();
  return asking;
}

function headers(extra) {
  const h = new Headers(extra || {});
  const t = token();
  if (t) h.set("Authorization", "Bearer " + t);
  return h;
}

// api calls one route and returns its JSON (or text for text answers);
// a 401 asks for the token and tries again. extra are request headers.
export async function api(method, path, body, extra) {
  for (let attempt = 0; ; attempt++) {
    const init = { method, headers: headers(extra), credentials: "omit" };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers.set("Content-Type", "application/json");
    }
    const resp = await fetch(path, init);
    if (resp.status === 401 && attempt < 3) {
      await askToken();
      continue;
    }
    const type = resp.headers.get("Content-Type") || "";
    const data = type.includes("json") ? await resp.json() : await resp.text();
    if (!resp.ok) throw new ApiError(resp.status, data);
    return data;
  }
}

export const get = (path) => api("GET", path);
// getList asks a route that streams by default for its JSON listing.
export const getList = (path) => api("GET", path, undefined, { Accept: "application/json" });
export const post = (path, body) => api("POST", path, body || {});

// parseEvents reads the complete blocks of a Server-Sent Events text
// (lines end in LF, CRLF or CR; a block ends at an empty line) and returns
// {events: [{id, data}], last, rest}: the data of each block with data,
// its lines joined with "\n" as the format says; last, the newest id:
// field seen (undefined when none), also from a block without data; rest,
// the incomplete text after the last block.
export function parseEvents(text) {
  const out = { events: [], last: undefined, rest: "" };
  // A CR at the very end may be the first half of a CRLF: it waits for
  // what follows.
  const hold = text.endsWith("\r") ? "\r" : "";
  const lines = text.slice(0, text.length - hold.length).split(/\r\n|\r|\n/);
  // The last piece is unterminated: a partial line, or "" after a newline.
  const tail = lines.pop() + hold;
  let start = 0;
  let block = [];
  const blocks = [];
  lines.forEach((line, i) => {
    if (line === "") {
      if (block.length) blocks.push(block);
      block = [];
      start = i + 1;
    } else block.push(line);
  });
  for (const b of blocks) {
    const data = [];
    let id;
    for (const line of b) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data.push(value);
      else if (field === "id" && /^\d+$/.test(value)) id = Number(value);
    }
    if (id !== undefined) out.last = id;
    if (data.length) out.events.push({ id, data: data.join("\n") });
  }
  out.rest = lines.slice(start).join("\n") + (start < lines.length ? "\n" : "") + tail;
  return out;
}

// readEvents reads the Server-Sent Events of resp's body until it ends,
// calling onEvent with each event's data parsed as JSON and onId (if
// given) with each id the stream moves to.
export async function readEvents(resp, onEvent, onId) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const got = parseEvents(buf + value);
    buf = got.rest;
    for (const ev of got.events) {
      try { onEvent(JSON.parse(ev.data)); } catch (err) { console.error(err); }
    }
    if (got.last !== undefined && onId) onId(got.last);
  }
}

// stream follows a Server-Sent Events route with fetch (EventSource cannot
// send the Authorization header) and calls onEvent with each parsed event
// ({id, type, repo, session, payload, at}). It reconnects after errors,
// resuming after the last id, until signal aborts. after "now" starts
// after the newest event instead of at the start of the log.
export async function stream(path, onEvent, signal, after = 0) {
  let last = after;
  while (!signal.aborted) {
    try {
      const h = headers({ Accept: "text/event-stream" });
      let url = path;
      if (last === "now") url += (path.includes("?") ? "&" : "?") + "after=now";
      else if (last) h.set("Last-Event-ID", String(last));
      const resp = await fetch(url, { headers: h, signal, credentials: "omit" });
      if (resp.status === 401) {
        await askToken();
        continue;
      }
      if (resp.status === 403) return; // this token may not follow it (a reviewer's); asking again will not change that
      if (!resp.ok) throw new ApiError(resp.status, await resp.json().catch(() => null));
      await readEvents(resp, onEvent, (id) => { last = id; });
    } catch (err) {
      if (signal.aborted) return;
      console.warn("event stream", path, err);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}
