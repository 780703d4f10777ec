// The dashboard's entry: loads the state machine and the diagram, then
// routes between the overview (#/?filters) and a node page (#/node/<uuid>).
import { $, showError } from './ui.js';
import { Overview } from './overview.js';
import { NodePage } from './node.js';

async function load(path) {
  const resp = await fetch(path, { credentials: 'same-origin' });
  if (!resp.ok) throw new Error(`${path}: ${resp.status}`);
  return resp;
}

function setLive(live) {
  const s = $('#live');
  s.textContent = live ? 'live' : 'reconnecting…';
  s.className = 'live ' + (live ? 'on' : 'off');
  document.body.dataset.live = live ? 'true' : 'false';
}

async function main() {
  const machine = await (await load('machine.json')).json();
  $('#diagram').innerHTML = await (await load('lifecycle.svg')).text();
  const overview = new Overview(machine, setLive);
  const nodePage = new NodePage(machine, setLive);
  window.anvil = { overview, nodePage }; // for the console and the benchmarks
  let current = null;
  const route = () => {
    showError(null);
    const hash = location.hash.slice(1) || '/';
    const m = hash.match(/^\/node\/([^/?]+)/);
    const next = m ? nodePage : overview;
    if (current && current !== next) current.stop();
    current = next;
    $('#overview').hidden = next !== overview;
    $('#node').hidden = next !== nodePage;
    if (m) nodePage.start(decodeURIComponent(m[1]));
    else overview.start(new URLSearchParams(hash.split('?')[1] || ''));
  };
  window.addEventListener('hashchange', route);
  route();
}

main().catch((err) => showError(err));
