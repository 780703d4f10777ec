// Small DOM and formatting helpers shared by the views.

export const $ = (sel, root = document) => root.querySelector(sel);

// el builds an element: el('td', {class: 'x', dataset: {uuid}}, 'text', child).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'onclick') e.addEventListener('click', v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// show shows a value as the CLI does: null as an empty cell, objects as JSON.
export function show(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v, null, 1);
  return String(v);
}

// duration renders seconds as "3d 4h", "5h 2m", "4m 10s" or "12s".
export function duration(sec) {
  if (sec === null || sec === undefined || isNaN(sec)) return '';
  sec = Math.max(0, Math.round(sec));
  const d = Math.floor(sec / 86400), h = Math.floor(sec % 86400 / 3600);
  const m = Math.floor(sec % 3600 / 60), s = sec % 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

// since renders how long ago an API timestamp was.
export function since(ts) {
  if (!ts) return '';
  return duration((Date.now() - Date.parse(ts)) / 1000);
}

export function nodeLink(n) {
  return el('a', { href: '#/node/' + encodeURIComponent(n.uuid) }, n.name || n.uuid);
}

// table fills a <table> with a header row and one row per item.
export function fillTable(table, columns, items, empty = 'none') {
  table.replaceChildren();
  if (!items.length) {
    table.append(el('tr', {}, el('td', { class: 'empty' }, empty)));
    return;
  }
  table.append(el('tr', {}, ...columns.map(([label]) => el('th', {}, label))));
  for (const it of items) {
    table.append(el('tr', {}, ...columns.map(([, cell]) => el('td', {}, cell(it)))));
  }
}

// debounce runs fn once, delay ms after the last call; cancel() drops a
// pending call (a view that stops must not load after it stopped).
export function debounce(fn, delay) {
  let t = null;
  const call = (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), delay);
  };
  call.cancel = () => clearTimeout(t);
  return call;
}

export function showError(err) {
  const p = $('#error');
  if (!err) { p.hidden = true; return; }
  p.textContent = err.message || String(err);
  p.hidden = false;
}
