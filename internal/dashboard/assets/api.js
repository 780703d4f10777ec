// The API as the page uses it: every request goes to the same server with
// the browser's session cookie (set by the login, invisible to scripts)
// and asks for the newest microversion. Writes also carry the session's
// CSRF token, which the server requires of cookie-authenticated writes.

const headers = {
  'Accept': 'application/json',
  'X-OpenStack-Ironic-API-Version': 'latest',
};

// The session's CSRF token (not a credential: useless without the cookie).
let csrf = '';

// sessionPath is where the page logs in, asks who is logged in and logs out.
export const sessionPath = '/dashboard/session';

// onUnauthorized is called when the API answers 401: the session ended.
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

// apiError turns Ironic's error body into an Error with its faultstring.
async function apiError(resp) {
  let text = `${resp.status} ${resp.statusText}`;
  try {
    const body = await resp.json();
    const inner = body.error_message ? JSON.parse(body.error_message) : body.error;
    text = inner.faultstring || inner.description || inner.message || text;
  } catch (_) { /* not Ironic's error body */ }
  const err = new Error(text);
  err.status = resp.status;
  if (resp.status === 401) onUnauthorized();
  return err;
}

// inflight are the reads under way: logout waits for them, so that none
// reaches the server after the session ended (it would answer 401).
const inflight = new Set();

export async function get(path) {
  const req = fetch(path, { headers, credentials: 'same-origin' });
  inflight.add(req);
  try {
    const resp = await req;
    if (!resp.ok) throw await apiError(resp);
    return await resp.json();
  } finally {
    inflight.delete(req);
  }
}

export async function send(method, path, body) {
  const init = { method, headers: { ...headers, 'X-Anvil-CSRF': csrf }, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (!resp.ok) throw await apiError(resp);
  return resp.status === 204 || resp.status === 202 ? null : resp.json().catch(() => null);
}

// session answers who is logged in ({strategy, authenticated, user,
// project, roles, csrf_token}); it never fails for want of a login.
export async function session() {
  const s = await get(sessionPath);
  csrf = s.csrf_token || '';
  return s;
}

// login posts the credentials; the answer sets the session cookie.
export async function login(creds) {
  const resp = await fetch(sessionPath, {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'Accept': 'application/json' },
    body: JSON.stringify(creds),
  });
  if (!resp.ok) {
    const err = new Error(resp.status === 401 ? 'wrong user, password or token' : `login refused (${resp.status})`);
    try { err.message = (await resp.json()).error.message || err.message; } catch (_) { /* keep */ }
    throw err;
  }
  const s = await resp.json();
  csrf = s.csrf_token || '';
  return s;
}

// logout ends the session once the reads under way are answered (the
// caller stops its views first, so that no new one starts).
export async function logout() {
  await Promise.allSettled([...inflight]);
  await send('DELETE', sessionPath);
  csrf = '';
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  return q.toString();
}

// Node event types the stream sends, and the stream's own ones.
const eventTypes = ['node.created', 'node.updated', 'node.deleted', 'node.history', 'node.snapshot', 'reset'];

// watch follows GET /v1/events/stream with the given parameters and calls
// onEvent(type, event) for each event and onStatus(live) when the
// connection opens or drops. EventSource reconnects by itself, resuming
// from the last event id, and sends the session cookie (same origin); a
// reset event means events were lost: re-read.
export function watch(params, onEvent, onStatus) {
  const es = new EventSource('/v1/events/stream?' + query(params));
  for (const t of eventTypes) {
    es.addEventListener(t, (e) => onEvent(t, JSON.parse(e.data)));
  }
  es.onopen = () => onStatus(true);
  es.onerror = () => onStatus(false);
  return es;
}
