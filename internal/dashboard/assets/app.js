// The dashboard's entry: loads the state machine and the diagram, asks who
// is logged in (and for a login when the server authenticates and no one
// is), then routes between the overview (#/?filters) and a node page
// (#/node/<uuid>, its console tab #/node/<uuid>/console).
import { $, showError, debounce } from './ui.js';
import { session, login, logout, setUnauthorizedHandler } from './api.js';
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

class App {
  constructor(machine) {
    this.overview = new Overview(machine, (live) => this.live(live));
    this.nodePage = new NodePage(machine, (live) => this.live(live));
    this.current = null;
    this.started = false;
    // A dropped stream may be an ended session (EventSource cannot tell).
    this.recheck = debounce(() => this.check(), 1000);
    setUnauthorizedHandler(() => this.showLogin());
    window.addEventListener('hashchange', () => { if (this.started) this.route(); });
    $('#login-form').addEventListener('submit', (e) => { e.preventDefault(); this.submitLogin(); });
    $('#logout').addEventListener('click', () => this.logout());
  }

  live(on) {
    setLive(on);
    if (!on && this.started) this.recheck();
  }

  // check asks who is logged in and shows the login or the dashboard.
  async check() {
    const s = await session();
    if (!s.authenticated) { this.showLogin(s.strategy); return; }
    this.start(s);
  }

  start(s) {
    document.body.dataset.strategy = s.strategy;
    document.body.dataset.project = s.project || '';
    const who = $('#who');
    who.hidden = s.strategy === 'noauth';
    $('#who-name').textContent = s.project ? `${s.user} (project ${s.project})` : (s.user || '');
    // Conductors are a system resource: a project's summary has none.
    $('#conductors-panel').hidden = !!s.project;
    $('#login').hidden = true;
    $('#live').hidden = false;
    if (this.started) return;
    this.started = true;
    this.route();
  }

  stop() {
    this.started = false;
    if (this.current) this.current.stop();
    this.current = null;
    $('#overview').hidden = true;
    $('#node').hidden = true;
  }

  showLogin(strategy) {
    this.stop();
    const form = $('#login-form');
    if (strategy) form.dataset.strategy = strategy;
    else if (!form.dataset.strategy) form.dataset.strategy = document.body.dataset.strategy || 'http_basic';
    $('#who').hidden = true;
    $('#live').hidden = true;
    $('#total').textContent = '';
    $('#login').hidden = false;
    document.body.dataset.live = 'false';
    const first = form.dataset.strategy === 'jwt' ? form.elements.token : form.elements.username;
    first.focus();
  }

  async submitLogin() {
    const form = $('#login-form');
    const err = $('#login-error');
    const creds = form.dataset.strategy === 'jwt'
      ? { token: form.elements.token.value.trim() }
      : { username: form.elements.username.value, password: form.elements.password.value };
    try {
      const s = await login(creds);
      err.hidden = true;
      form.reset(); // the page keeps no password nor token
      showError(null);
      this.start(s);
    } catch (e) {
      form.elements.password.value = '';
      err.textContent = e.message;
      err.hidden = false;
    }
  }

  async logout() {
    this.stop(); // no view reads (or follows the stream) past the session's end
    try {
      await logout();
    } catch (e) {
      showError(e);
    }
    this.showLogin();
  }

  route() {
    showError(null);
    const hash = location.hash.slice(1) || '/';
    const m = hash.match(/^\/node\/([^/?]+)(\/console)?/);
    const next = m ? this.nodePage : this.overview;
    if (this.current && this.current !== next) this.current.stop();
    this.current = next;
    $('#overview').hidden = next !== this.overview;
    $('#node').hidden = next !== this.nodePage;
    if (m) this.nodePage.start(decodeURIComponent(m[1]), m[2] ? 'console' : 'details');
    else this.overview.start(new URLSearchParams(hash.split('?')[1] || ''));
  }
}

async function main() {
  const machine = await (await load('machine.json')).json();
  $('#diagram').innerHTML = await (await load('lifecycle.svg')).text();
  const app = new App(machine);
  window.anvil = { overview: app.overview, nodePage: app.nodePage, app }; // for the console and the benchmarks
  await app.check();
}

main().catch((err) => showError(err));
