// A node's page: its fields as the API renders them (secrets masked by
// the API), ports, history with the time spent in each state, last_error,
// the diagnosis of its last failure (when the principal may read it), and
// the actions the state machine allows in its state, each confirmed;
// its console tab (#/node/<uuid>/console) is the live serial console.
import { get, send, watch } from './api.js';
import { $, el, show, duration, since, fillTable, debounce, showError } from './ui.js';
import { ConsoleTab } from './console.js';

export class NodePage {
  constructor(machine, setLive) {
    this.machine = machine;
    this.setLive = setLive;
    this.stream = null;
    this.reload = debounce(() => this.load(), 150);
    this.console = new ConsoleTab();
    this.tab = 'details';
  }

  // start shows node ident's page on tab ("details" or "console"); a
  // change of tab on the same node keeps its stream.
  start(ident, tab = 'details') {
    const base = `#/node/${encodeURIComponent(ident)}`;
    $('#tab-details').href = base;
    $('#tab-console').href = base + '/console';
    if (this.stream && ident === this.ident) {
      this.showTab(tab);
      return;
    }
    this.stop();
    this.tab = tab;
    this.ident = ident;
    $('#action-result').textContent = '';
    this.load();
    this.stream = watch({ node: ident, types: 'node.created,node.updated,node.deleted,node.history' },
      () => this.reload(), this.setLive);
  }

  stop() {
    if (this.stream) this.stream.close();
    this.stream = null;
    this.reload.cancel();
    this.console.hide();
  }

  showTab(tab) {
    this.tab = tab;
    const onConsole = tab === 'console';
    $('#details-tab').hidden = onConsole;
    $('#console-tab').hidden = !onConsole;
    $('#tab-details').setAttribute('aria-selected', String(!onConsole));
    $('#tab-console').setAttribute('aria-selected', String(onConsole));
    if (!onConsole) this.console.hide();
    else if (this.node) this.console.show(this.node);
  }

  async load() {
    const id = encodeURIComponent(this.ident);
    try {
      const [node, ports] = await Promise.all([
        get(`/v1/nodes/${id}`),
        get(`/v1/nodes/${id}/ports?detail=True`),
      ]);
      // A node's history is its owner's (Ironic's baremetal:node:history:get):
      // a project that only leases the node is not shown it.
      const project = document.body.dataset.project;
      const history = project && node.owner !== project
        ? { history: [] }
        : await get(`/v1/nodes/${id}/history?detail=True`).catch(() => ({ history: [] }));
      // A failure's diagnosis is announced in the history; it is guarded as
      // the console (the owner's members): others are not shown it.
      const diagnosed = history.history.some((h) => h.event_type === 'diagnosis');
      const diagnosis = diagnosed ? await get(`/v1/nodes/${id}/diagnosis`).catch(() => null) : null;
      showError(null);
      this.node = node;
      this.render(node, ports.ports, history.history);
      this.renderDiagnosis(diagnosis);
      this.showTab(this.tab);
    } catch (err) {
      showError(err);
    }
  }

  render(n, ports, history) {
    $('#node-title').textContent = n.name ? `${n.name} (${n.uuid})` : n.uuid;
    const st = $('#node-state');
    st.replaceChildren(
      el('span', { class: 'ps ' + this.stateClass(n.provision_state), id: 'node-provision-state' }, show(n.provision_state)),
      n.target_provision_state ? ` → ${n.target_provision_state}` : '',
      ` for ${since(n.provision_updated_at)} · power `,
      el('span', { id: 'node-power-state' }, show(n.power_state) || 'unknown'),
      n.target_power_state ? ` → ${n.target_power_state}` : '',
      n.maintenance ? el('span', { class: 'bad' }, ` · maintenance: ${show(n.maintenance_reason)}`) : '',
      n.reservation ? ` · locked by ${n.reservation}` : '');
    const le = $('#node-error');
    le.hidden = !n.last_error;
    le.textContent = n.last_error ? 'Last error: ' + n.last_error : '';
    this.renderActions(n);
    this.renderTimeline(n, history);
    fillTable($('#ports'), [['address', (p) => p.address], ['name', (p) => show(p.name)],
      ['pxe', (p) => show(p.pxe_enabled)], ['physical network', (p) => show(p.physical_network)],
      ['uuid', (p) => p.uuid]], ports, 'no ports');
    const rows = Object.keys(n).filter((k) => k !== 'links' && k !== 'ports' && k !== 'portgroups' && k !== 'volume' && k !== 'states').sort();
    $('#fields').replaceChildren(...rows.map((k) =>
      el('tr', { dataset: { field: k } }, el('th', {}, k), el('td', {}, el('pre', {}, show(n[k]))))));
  }

  // renderDiagnosis shows the class of the last failure, what to do, the
  // evidence and the newest console lines.
  renderDiagnosis(d) {
    const box = $('#node-diagnosis');
    box.hidden = !d;
    if (!d) return;
    $('#diagnosis-class').textContent = `${d.class} · ${show(d.provision_state)} at ${new Date(d.created_at).toLocaleString()}`;
    $('#diagnosis-summary').textContent = d.summary;
    $('#diagnosis-hint').textContent = 'What to do: ' + d.hint;
    $('#diagnosis-evidence').replaceChildren(...(d.evidence || []).map((e) => el('li', {}, e)));
    const tail = (d.console_tail || '').split(/\r?\n/).slice(-30).join('\n').trim();
    $('#diagnosis-console').textContent = tail || d.console_note || 'no console output recorded';
  }

  stateClass(s) {
    const st = this.machine.states.find((x) => x.name === s);
    return st ? st.class : '';
  }

  // renderTimeline lists the transitions, newest first, with the time the
  // node spent in the state it left; the current state's time runs on.
  renderTimeline(n, history) {
    const items = [el('li', { class: 'current' }, el('b', {}, show(n.provision_state)),
      ` now, for ${since(n.provision_updated_at)}`)];
    for (const h of [...history].reverse()) {
      const moved = h.from_state || h.to_state;
      items.push(el('li', { class: (h.severity || '').toLowerCase() },
        el('time', { datetime: h.created_at }, new Date(h.created_at).toLocaleString()), ' ',
        moved ? el('b', {}, `${show(h.from_state)} → ${show(h.to_state)}`) : '',
        moved && h.duration_seconds !== null ? ` after ${duration(h.duration_seconds)} in ${h.from_state}` : '',
        h.event ? el('div', { class: 'event' }, h.event) : ''));
    }
    $('#timeline').replaceChildren(...items);
  }

  renderActions(n) {
    const box = $('#actions');
    box.replaceChildren();
    const add = (label, kind, run, extra) => box.append(el('button', {
      type: 'button', class: 'action ' + kind, dataset: { action: label },
      onclick: () => this.confirm(label, extra, run),
    }, label));
    const id = encodeURIComponent(n.uuid);
    const busy = !!n.reservation || !!n.target_power_state;
    for (const target of this.machine.actions[n.provision_state] || []) {
      const steps = target === 'clean' || target === 'service';
      add(target, 'provision', (text) => {
        const body = { target };
        if (target === 'clean') body.clean_steps = JSON.parse(text || '[]');
        if (target === 'service') body.service_steps = JSON.parse(text || '[]');
        return send('PUT', `/v1/nodes/${id}/states/provision`, body);
      }, steps ? `${target} steps (JSON list)` : null);
    }
    for (const target of this.machine.power) {
      if (busy) break;
      add(target, 'power', () => send('PUT', `/v1/nodes/${id}/states/power`, { target }));
    }
    if (n.maintenance) add('unset maintenance', 'maintenance', () => send('DELETE', `/v1/nodes/${id}/maintenance`));
    else add('set maintenance', 'maintenance', (reason) => send('PUT', `/v1/nodes/${id}/maintenance`, { reason: reason || null }), 'reason');
  }

  // confirm asks before acting; extra, when set, labels a text field whose
  // value is passed to run.
  confirm(label, extra, run) {
    const dlg = $('#confirm');
    const name = this.node.name || this.node.uuid;
    $('#confirm-text').textContent = `${label} node ${name} (now ${show(this.node.provision_state)})?`;
    const lab = $('#confirm-extra-label');
    lab.hidden = !extra;
    lab.querySelector('span').textContent = extra || '';
    $('#confirm-extra').value = '';
    dlg.onclose = async () => {
      if (dlg.returnValue !== 'ok') return;
      const out = $('#action-result');
      out.textContent = `${label}: requested…`;
      try {
        await run($('#confirm-extra').value.trim());
        out.textContent = `${label}: accepted`;
      } catch (err) {
        out.textContent = `${label}: ${err.message}`;
      }
      this.reload();
    };
    dlg.returnValue = '';
    dlg.showModal();
  }
}
