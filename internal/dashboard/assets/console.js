// The node page's console tab: a terminal (xterm.js) on the node's console
// WebSocket (/v1/nodes/<uuid>/console/ws, the browser's session cookie
// authenticates it). Binary messages are the machine's output and, from
// the page, keystrokes; text messages are {"type": "status", "read_only"}
// and {"type": "end", "reason"}. Only the viewer holding the keyboard
// types: the others are marked read-only and send nothing.
import { Terminal } from './xterm.mjs';
import { send } from './api.js';
import { $ } from './ui.js';

// replayBytes is how much recorded output a new viewer starts with.
const replayBytes = 65536;
// retryMs is the wait before reconnecting a console that was not ready.
const retryMs = 2000;

export class ConsoleTab {
  constructor() {
    this.term = null;
    this.ws = null;
    this.node = null;
    this.active = false;
    this.readOnly = true;
    this.retry = null;
    $('#console-enable').addEventListener('click', () => this.enable());
  }

  // show opens the tab for node (its API rendering); a node whose console
  // is disabled gets the button that enables it.
  show(node) {
    const same = this.node && this.node.uuid === node.uuid;
    this.node = node;
    this.active = true;
    $('#console-enable').hidden = !!node.console_enabled;
    if (!node.console_enabled) {
      this.disconnect();
      this.status('off', 'The console is disabled.');
      return;
    }
    if (!this.term) this.makeTerminal();
    if (!same || !this.ws) this.connect();
  }

  // hide closes the connection and clears the screen (leaving the tab or
  // the node page, logging out): no console text stays in the page.
  hide() {
    this.active = false;
    this.disconnect();
    if (this.term) this.term.reset();
  }

  makeTerminal() {
    this.term = new Terminal({ convertEol: false, scrollback: 5000, fontSize: 13, cursorBlink: true });
    this.term.open($('#terminal'));
    this.term.onData((data) => this.type(data));
  }

  connect() {
    this.disconnect();
    if (this.term) this.term.reset();
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const url = `${proto}//${location.host}/v1/nodes/${encodeURIComponent(this.node.uuid)}/console/ws?replay=${replayBytes}`;
    this.status('connecting', 'Connecting to the console…');
    const ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let ended = false;
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      if (typeof ev.data !== 'string') {
        this.term.write(new Uint8Array(ev.data));
        return;
      }
      let m = {};
      try { m = JSON.parse(ev.data); } catch (_) { return; }
      if (m.type === 'status') {
        this.readOnly = !!m.read_only;
        this.status(this.readOnly ? 'read-only' : 'read-write', this.readOnly
          ? 'Read-only: another viewer holds the keyboard.'
          : 'Connected: you hold the keyboard.');
      } else if (m.type === 'end') {
        ended = true;
        this.status('ended', `The console session ended: ${m.reason || 'closed'}.`);
      }
    };
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.readOnly = true;
      if (!ended) {
        // Not connected on the conductor yet (503), or the connection broke.
        this.status('connecting', `The console is not connected${ev.reason ? ': ' + ev.reason : ''}; retrying…`);
        if (this.active) this.retry = setTimeout(() => { if (this.active && this.node.console_enabled) this.connect(); }, retryMs);
      }
    };
  }

  disconnect() {
    clearTimeout(this.retry);
    this.retry = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close();
  }

  type(data) {
    if (this.readOnly || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(new TextEncoder().encode(data));
  }

  status(state, text) {
    const s = $('#console-status');
    s.dataset.state = state;
    s.textContent = text;
    document.body.dataset.console = state;
  }

  async enable() {
    try {
      await send('PUT', `/v1/nodes/${encodeURIComponent(this.node.uuid)}/states/console`, { enabled: true });
      this.status('connecting', 'Enabling the console…');
    } catch (err) {
      this.status('off', `Enabling the console failed: ${err.message}`);
    }
  }
}
