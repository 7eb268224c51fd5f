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
// a 401 asks for the token and tries again.
export async function api(method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const init = { method, headers: headers(), credentials: "omit" };
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
export const post = (path, body) => api("POST", path, body || {});

// stream follows a Server-Sent Events route with fetch (EventSource cannot
// send the Authorization header) and calls onEvent with each parsed event
// ({id, type, repo, session, payload, at}). It reconnects after errors,
// resuming after the last id, until signal aborts.
export async function stream(path, onEvent, signal, after = 0) {
  let last = after;
  while (!signal.aborted) {
    try {
      const h = headers({ Accept: "text/event-stream" });
      if (last) h.set("Last-Event-ID", String(last));
      const resp = await fetch(path, { headers: h, signal, credentials: "omit" });
      if (resp.status === 401) {
        await askToken();
        continue;
      }
      if (resp.status === 403) return; // this token may not follow it (a reviewer's); asking again will not change that
      if (!resp.ok) throw new ApiError(resp.status, await resp.json().catch(() => null));
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("data: ")) data += line.slice(6);
            else if (line.startsWith("id: ")) last = Number(line.slice(4));
          }
          if (data) {
            try { onEvent(JSON.parse(data)); } catch (err) { console.error(err); }
          }
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      console.warn("event stream", path, err);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}
