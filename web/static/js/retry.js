// A provider that keeps failing, said where the user looks: while a turn
// backs off between attempts, the cause (connection refused, 401, model
// not found…) shows inline above the composer, with "Switch model" (rerun
// the last message on another model) and "Stop retrying" (interrupt the
// turn). The error banner of a failed turn offers the same model switch.

import { h, icon } from './dom.js';

// CAUSES map a provider error's text to what it means, first match wins.
const CAUSES = [
  [/connection refused|ECONNREFUSED/i, 'Connection refused', 'Nothing answers at the provider’s address: is the server running, and is its base URL right?'],
  [/no such host|ENOTFOUND|name resolution|server misbehaving/i, 'Unknown host', 'The provider’s host name does not resolve: check its base URL.'],
  [/connection reset|ECONNRESET|broken pipe|EOF\b/i, 'Connection lost', 'The provider closed the connection before answering.'],
  [/x509|certificate|tls:/i, 'TLS failure', 'The provider’s certificate was not accepted.'],
  [/\b401\b|unauthori[sz]ed|invalid[ _-]?api[ _-]?key|incorrect api key|authentication/i, '401 Unauthorized', 'The provider rejected the API key: fix it in Settings → Providers.'],
  [/\b403\b|forbidden|permission/i, '403 Forbidden', 'The API key may not use this model.'],
  [/model[^.]{0,80}(not found|does not exist|not exist|unknown|not available)|\bnot_found\b|\b404\b/i, 'Model not found', 'The provider does not serve this model: switch to another, or fix its name in Settings → Models.'],
  [/\b429\b|rate.?limit|too many requests/i, 'Rate limited', 'The provider asks to slow down.'],
  [/timeout|timed out|deadline exceeded/i, 'Timed out', 'The provider did not answer in time.'],
  [/\b(500|502|503|504|529)\b|overloaded|unavailable|bad gateway/i, 'Provider unavailable', 'The provider failed on its side; this is usually temporary.'],
];

// describeCause reads a provider error (its message, and optionally its
// HTTP status) as {title, hint}, or null when nothing is recognized.
export function describeCause(message, statusCode) {
  const text = `${statusCode ? statusCode + ' ' : ''}${message || ''}`;
  for (const [re, title, hint] of CAUSES) if (re.test(text)) return { title, hint };
  return null;
}

// modelSwitch is a labelled picker of the other models; picking one calls
// onPick(model). Null when there is no other model to switch to.
export function modelSwitch(models, currentId, onPick) {
  const others = (models || []).filter((m) => m.id !== currentId);
  if (!others.length) return null;
  const sel = h('select', { class: 'picker switch-model', 'aria-label': 'Switch model and rerun the last message' },
    h('option', { value: '', text: 'Switch model…' }),
    ...others.map((m) => h('option', { value: m.id, text: m.display_name || `${m.provider}/${m.model}` })));
  sel.addEventListener('change', () => {
    const m = others.find((x) => x.id === sel.value);
    if (m) onPick(m);
  });
  return sel;
}

// RetryNotice: the cause of the failing attempts, with Switch model and
// Stop retrying, shown while the chat retries.
export class RetryNotice {
  // handlers: {models(): the models, current(): the chat's model id,
  //            onSwitch(model), onStop()}
  constructor(handlers) {
    this.handlers = handlers;
    this.el = h('div', { class: 'retry-slot' });
    this.sig = undefined;
  }

  // show renders retry (null hides the notice).
  show(retry) {
    const sig = retry ? JSON.stringify([retry.error, retry.kind, this.handlers.current(), (this.handlers.models() || []).length]) : '';
    if (sig === this.sig) return;
    this.sig = sig;
    if (!retry) {
      this.el.replaceChildren();
      return;
    }
    const cause = describeCause(retry.error);
    const hd = this.handlers;
    const stop = h('button', { type: 'button', class: 'btn small', onclick: (e) => { e.currentTarget.disabled = true; hd.onStop(); } }, icon('stop'), 'Stop retrying');
    this.el.replaceChildren(h('div', { class: 'retry-notice', role: 'status' },
      icon('alert', 'banner-icon'),
      h('div', { class: 'banner-body' },
        h('div', { class: 'retry-cause' }, h('strong', { text: cause ? cause.title : 'The provider keeps failing' }),
          cause ? h('span', { class: 'muted', text: ` — ${cause.hint}` }) : null),
        retry.error ? h('div', { class: 'retry-error', text: retry.error }) : null,
        h('div', { class: 'banner-actions' },
          modelSwitch(hd.models(), hd.current(), (m) => hd.onSwitch(m)), stop))));
  }
}
