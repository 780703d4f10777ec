// The API as the page uses it: every request goes to the same server with
// the browser's credentials (so HTTP basic authentication just works) and
// asks for the newest microversion.

const headers = {
  'Accept': 'application/json',
  'X-OpenStack-Ironic-API-Version': 'latest',
};

// apiError turns Ironic's error body into an Error with its faultstring.
async function apiError(resp) {
  let text = `${resp.status} ${resp.statusText}`;
  try {
    const body = await resp.json();
    const inner = JSON.parse(body.error_message);
    text = inner.faultstring || inner.description || text;
  } catch (_) { /* not Ironic's error body */ }
  const err = new Error(text);
  err.status = resp.status;
  return err;
}

export async function get(path) {
  const resp = await fetch(path, { headers, credentials: 'same-origin' });
  if (!resp.ok) throw await apiError(resp);
  return resp.json();
}

export async function send(method, path, body) {
  const init = { method, headers: { ...headers }, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (!resp.ok) throw await apiError(resp);
  return resp.status === 204 || resp.status === 202 ? null : resp.json().catch(() => null);
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
// from the last event id; a reset event means events were lost: re-read.
export function watch(params, onEvent, onStatus) {
  const es = new EventSource('/v1/events/stream?' + query(params), { withCredentials: true });
  for (const t of eventTypes) {
    es.addEventListener(t, (e) => onEvent(t, JSON.parse(e.data)));
  }
  es.onopen = () => onStatus(true);
  es.onerror = () => onStatus(false);
  return es;
}
