// The client's copy of one chat, built only from stream events (API.md,
// "Stream"). Messages are keyed by id, so a replayed or repeated event
// never duplicates one; the live preview is keyed by episode
// (history_version, generation_attempt) and deduplicated by seq.

export function newChatState() {
  return {
    messages: new Map(), // id -> ChatMessage (visible rows only)
    queue: [],
    status: null, // waiting | running | interrupting | requires_action | error
    error: null, // ChatError while status is error
    action: null, // {tool_calls: [{tool_call_id, tool_name, args}]} while requires_action
    approvals: null, // [{tool_call_id, tool_name, server, args, effect}] awaiting approval while requires_action
    elicitations: [], // MCP servers' pending questions (elicitation_update)
    retry: null, // {attempt, delay_ms, error, kind, retrying_at} while backing off
    preview: null, // the streaming reply, see addPart
    booted: false, // the bootstrap (ending with its status event) is in
  };
}

// applyEvent folds one stream event into s. now is Date.now().
export function applyEvent(s, e, now) {
  switch (e.type) {
    case 'message':
      if (e.message) s.messages.set(e.message.id, e.message);
      break;
    case 'history_reset':
      s.messages.clear();
      break;
    case 'queue_update':
      s.queue = e.queued_messages || [];
      break;
    case 'status': {
      const st = e.status && e.status.status;
      s.status = st;
      if (st !== 'error') s.error = null;
      if (st !== 'requires_action') s.action = s.approvals = null;
      if (st !== 'running') s.retry = null;
      if (st !== 'running' && st !== 'interrupting') s.preview = null;
      s.booted = true;
      break;
    }
    case 'error':
      s.error = e.error || { kind: 'generic', message: 'Unknown error' };
      break;
    case 'action_required':
      s.action = e.action_required || { tool_calls: [] };
      break;
    case 'approval_required':
      s.approvals = (e.approval_required && e.approval_required.tool_calls) || [];
      break;
    case 'elicitation_update':
      s.elicitations = e.elicitations || [];
      break;
    case 'retry':
      s.retry = e.retry;
      break;
    case 'preview_reset':
      s.preview = null;
      // A reset at the end of the back-off is the next attempt starting.
      if (s.retry && Date.parse(s.retry.retrying_at) <= now + 1000) s.retry = null;
      break;
    case 'message_part':
      if (e.message_part) addPart(s, e.message_part, now);
      break;
  }
}

function addPart(s, mp, now) {
  let p = s.preview;
  if (!p || p.hv !== mp.history_version || p.ga !== mp.generation_attempt) {
    p = s.preview = {
      hv: mp.history_version, ga: mp.generation_attempt, lastSeq: 0, parts: [],
      startedAt: now, reasoningStart: null, reasoningEnd: null, stale: false,
    };
  }
  p.stale = false;
  if (mp.seq <= p.lastSeq) return; // already have it (a reconnect replays the episode)
  p.lastSeq = mp.seq;
  const part = mp.part || {};
  if (part.type === 'reasoning') {
    if (p.reasoningStart == null) p.reasoningStart = now;
  } else if (p.reasoningStart != null && p.reasoningEnd == null) {
    p.reasoningEnd = now;
  }
  mergePart(p.parts, part);
  s.retry = null;
}

// mergePart joins a streamed delta into parts, as the server's assembler
// does: text and reasoning append to a trailing part of their type,
// tool-call deltas gather by tool_call_id.
export function mergePart(parts, d) {
  const last = parts[parts.length - 1];
  switch (d.type) {
    case 'text':
    case 'reasoning':
      if (last && last.type === d.type) last.text += d.text || '';
      else parts.push({ type: d.type, text: d.text || '' });
      return;
    case 'tool-call': {
      let call = parts.find((x) => x.type === 'tool-call' && x.tool_call_id === d.tool_call_id);
      if (!call) {
        call = { type: 'tool-call', tool_call_id: d.tool_call_id, tool_name: d.tool_name || '', argsText: '' };
        parts.push(call);
      }
      if (d.tool_name) call.tool_name = d.tool_name;
      if (d.args_delta) call.argsText += d.args_delta;
      if (d.args !== undefined) call.argsText = typeof d.args === 'string' ? d.args : JSON.stringify(d.args);
      return;
    }
    default:
      parts.push({ ...d });
  }
}

// maxMessageId is the newest committed message's id (0 when none).
export function maxMessageId(s) {
  let max = 0;
  for (const id of s.messages.keys()) if (id > max) max = id;
  return max;
}

// isBusy: a new message would wait in the queue (or interrupt).
export function isBusy(status) {
  return status === 'running' || status === 'interrupting' || status === 'requires_action';
}
