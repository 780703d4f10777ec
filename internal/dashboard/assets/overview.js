// The overview: the live lifecycle diagram, the fleet table and the fleet
// report (stuck, failed, maintenance, power errors, conductors).
import { get, query, watch } from './api.js';
import { $, el, show, since, duration, nodeLink, fillTable, debounce, showError } from './ui.js';

const pageSize = 50;
const tableFields = ['uuid', 'name', 'provision_state', 'target_provision_state', 'power_state',
  'maintenance', 'fault', 'driver', 'resource_class', 'owner', 'provision_updated_at'];
const filterNames = ['search', 'provision_state', 'power_state', 'maintenance', 'fault', 'driver',
  'resource_class', 'owner', 'conductor'];
// Columns of the table, in order: the node field each shows.
const columns = ['name', 'uuid', 'provision_state', 'target_provision_state', 'power_state',
  'maintenance', 'fault', 'driver', 'resource_class', 'owner', 'provision_updated_at'];

export class Overview {
  constructor(machine, setLive) {
    this.machine = machine;
    this.setLive = setLive;
    this.counts = {};
    this.params = new URLSearchParams();
    this.markers = [''];  // markers of the pages up to the current one
    this.seq = 0;         // the latest table request; older answers are dropped
    this.stream = null;
    this.flashes = new Set();     // states whose count changed since the last paint
    this.pendingRows = new Map(); // uuid → node values to show at the next paint
    this.frame = null;
    this.form = $('#filters');
    const sel = this.form.elements.provision_state;
    for (const s of machine.states) sel.append(el('option', {}, s.name));
    this.form.addEventListener('change', () => this.applyForm());
    this.form.elements.search.addEventListener('input', debounce(() => this.applyForm(), 300));
    this.form.addEventListener('reset', () => setTimeout(() => this.applyForm(), 0));
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.applyForm(); });
    for (const g of document.querySelectorAll('#lifecycle .state')) {
      const pick = () => this.pickState(g.dataset.state);
      g.addEventListener('click', pick);
      g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') pick(); });
    }
    for (const th of document.querySelectorAll('#nodes th[data-sort]')) {
      th.addEventListener('click', () => this.sortBy(th.dataset.sort));
    }
    $('#next').addEventListener('click', () => this.page(+1));
    $('#prev').addEventListener('click', () => this.page(-1));
    $('#first').addEventListener('click', () => { this.markers = ['']; this.loadTable(); });
    this.reloadTable = debounce(() => this.loadTable(), 400);
    this.reloadSummary = debounce(() => this.loadSummary(), 1000);
  }

  start(params) {
    this.params = params;
    for (const name of filterNames) this.form.elements[name].value = params.get(name) || '';
    this.markers = [''];
    this.markSelected();
    this.loadTable();
    if (!this.stream) {
      this.loadSummary();
      this.stream = watch({}, (t, e) => this.onEvent(t, e), this.setLive);
      this.tick = setInterval(() => this.loadSummary(), 30000);
    }
  }

  stop() {
    if (this.stream) this.stream.close();
    this.stream = null;
    clearInterval(this.tick);
    this.reloadTable.cancel();
    this.reloadSummary.cancel();
  }

  // applyForm puts the form's filters in the address, which reloads the table.
  applyForm() {
    const p = new URLSearchParams();
    for (const name of filterNames) {
      const v = this.form.elements[name].value.trim();
      if (v) p.set(name, v);
    }
    for (const k of ['sort_key', 'sort_dir']) if (this.params.get(k)) p.set(k, this.params.get(k));
    location.hash = '#/?' + p.toString();
  }

  pickState(state) {
    const p = new URLSearchParams(this.params);
    if (p.get('provision_state') === state) p.delete('provision_state');
    else p.set('provision_state', state);
    location.hash = '#/?' + p.toString();
  }

  sortBy(key) {
    const p = new URLSearchParams(this.params);
    const dir = p.get('sort_key') === key && p.get('sort_dir') !== 'desc' ? 'desc' : 'asc';
    p.set('sort_key', key);
    p.set('sort_dir', dir);
    location.hash = '#/?' + p.toString();
  }

  page(delta) {
    if (delta > 0 && this.nextMarker) this.markers.push(this.nextMarker);
    if (delta < 0 && this.markers.length > 1) this.markers.pop();
    this.loadTable();
  }

  markSelected() {
    const picked = this.params.get('provision_state');
    for (const g of document.querySelectorAll('#lifecycle .state')) {
      g.classList.toggle('selected', g.dataset.state === picked);
    }
    for (const th of document.querySelectorAll('#nodes th[data-sort]')) {
      th.classList.toggle('sorted', th.dataset.sort === this.params.get('sort_key'));
      th.classList.toggle('desc', th.dataset.sort === this.params.get('sort_key') && this.params.get('sort_dir') === 'desc');
    }
  }

  async loadTable() {
    const seq = ++this.seq;
    const p = { fields: tableFields.join(','), limit: pageSize, marker: this.markers.at(-1) };
    for (const name of filterNames) p[name] = this.params.get(name);
    p.sort_key = this.params.get('sort_key');
    p.sort_dir = this.params.get('sort_dir');
    try {
      const res = await get('/v1/fleet/nodes?' + query(p));
      if (seq !== this.seq) return;
      showError(null);
      this.nextMarker = res.next_marker;
      const body = $('#nodes tbody');
      body.replaceChildren(...res.nodes.map((n) => this.row(n)));
      if (!res.nodes.length) body.append(el('tr', {}, el('td', { colspan: columns.length, class: 'empty' }, 'no node matches')));
      const first = (this.markers.length - 1) * pageSize;
      $('#matching').textContent = `${res.matching} matching`;
      $('#pageinfo').textContent = res.nodes.length ? `${first + 1}–${first + res.nodes.length} of ${res.matching}` : '';
      $('#next').disabled = !res.next_marker;
      $('#prev').disabled = $('#first').disabled = this.markers.length === 1;
      document.body.dataset.tableSeq = String(seq);
    } catch (err) {
      if (seq === this.seq) showError(err);
    }
  }

  row(n) {
    const tr = el('tr', { dataset: { uuid: n.uuid } });
    for (const f of columns) tr.append(el('td', { dataset: { field: f } }));
    this.fillRow(tr, n);
    return tr;
  }

  fillRow(tr, n) {
    for (const td of tr.children) {
      const f = td.dataset.field;
      if (!(f in n)) continue;
      if (f === 'name') td.replaceChildren(nodeLink({ uuid: tr.dataset.uuid, name: n.name }));
      else if (f === 'provision_updated_at') { td.textContent = since(n[f]); td.title = n[f] || ''; }
      else td.textContent = show(n[f]);
      if (f === 'provision_state') td.className = 'ps ' + this.stateClass(n[f]);
    }
    tr.classList.toggle('maint', !!n.maintenance);
  }

  stateClass(s) {
    const st = this.machine.states.find((x) => x.name === s);
    return st ? st.class : '';
  }

  async loadSummary() {
    try {
      const s = await get('/v1/fleet/summary');
      this.counts = s.provision_states;
      this.paintCounts();
      $('#total').textContent = `${s.total} nodes · ${s.failed} failed · ${s.maintenance} in maintenance · ${s.stuck} stuck`;
      $('#stuck-after').textContent = `in a transitional state for more than ${duration(s.stuck_after_seconds)}`;
      const base = [['node', nodeLink], ['state', (n) => n.provision_state]];
      fillTable($('#stuck'), [...base, ['target', (n) => show(n.target_provision_state)],
        ['for', (n) => since(n.provision_updated_at)]], s.stuck_nodes);
      fillTable($('#failed'), [...base, ['last error', (n) => show(n.last_error)]], s.failed_nodes);
      fillTable($('#maint'), [...base, ['reason', (n) => show(n.maintenance_reason)], ['fault', (n) => show(n.fault)]], s.maintenance_nodes);
      fillTable($('#powerr'), [...base, ['last error', (n) => show(n.last_error)]], s.power_error_nodes);
      fillTable($('#conductors'), [['hostname', (c) => c.hostname], ['group', (c) => c.conductor_group],
        ['alive', (c) => el('span', { class: c.alive ? 'ok' : 'bad' }, c.alive ? 'alive' : 'dead')],
        ['locks held', (c) => c.locked_nodes], ['heartbeat', (c) => since(c.updated_at) + ' ago']], s.conductors);
    } catch (err) {
      showError(err);
    }
  }

  // paintCounts writes each state's count on the diagram; failure, wait
  // and hold states holding nodes are marked so that they stand out.
  paintCounts() {
    for (const g of document.querySelectorAll('#lifecycle .state')) {
      const n = this.counts[g.dataset.state] || 0;
      g.querySelector('.count').textContent = String(n);
      g.classList.toggle('holding', n > 0);
    }
  }

  bump(state, delta) {
    if (!state) return;
    this.counts[state] = (this.counts[state] || 0) + delta;
    this.flashes.add(state);
  }

  // onEvent applies a stream event to the counts in memory and queues the
  // row it changes; the page is painted once per frame however many events
  // arrive (a busy fleet sends thousands a second).
  onEvent(type, e) {
    if (type === 'reset') { this.loadSummary(); this.loadTable(); return; }
    const now = e.node_state || {};
    const before = e.previous || {};
    if (type === 'node.created') this.bump(now.provision_state, +1);
    if (type === 'node.deleted') this.bump(now.provision_state, -1);
    if (type === 'node.updated' && (e.changed || []).includes('provision_state')) {
      this.bump(before.provision_state, -1);
      this.bump(now.provision_state, +1);
    }
    if (type === 'node.updated' && e.node) {
      this.pendingRows.set(e.node, { ...this.pendingRows.get(e.node), ...now, name: e.name });
    }
    const filtered = filterNames.some((f) => this.params.get(f)) || this.params.get('sort_key');
    if (type !== 'node.updated' || filtered) this.reloadTable();
    this.reloadSummary();
    if (!this.frame) this.frame = requestAnimationFrame(() => this.paint());
  }

  paint() {
    this.frame = null;
    this.paintCounts();
    for (const state of this.flashes) {
      const g = document.querySelector(`#lifecycle .state[data-state="${CSS.escape(state)}"]`);
      if (!g) continue;
      g.classList.remove('flash');
      void g.getBBox(); // restart the animation
      g.classList.add('flash');
    }
    this.flashes.clear();
    for (const [uuid, n] of this.pendingRows) {
      const tr = document.querySelector(`#nodes tr[data-uuid="${CSS.escape(uuid)}"]`);
      if (tr) this.fillRow(tr, n);
    }
    this.pendingRows.clear();
  }
}
