// The form that sends a signal to a run waiting at a waitFor step.
import { h, act, say, actionButton } from './dom.js';

// What was typed, kept across re-renders of the run (each of its events redraws the page).
const draft = { runId: '', name: '', payload: '' };

/** A fieldset sending a named signal, with an optional JSON payload, to `runId`. */
export function signalBox(runId: string): HTMLElement {
  if (draft.runId !== runId) Object.assign(draft, { runId, name: '', payload: '' });
  const name = h('input', { id: 'sig-name', name: 'name', required: true, autocomplete: 'off' });
  const payload = h('textarea', { id: 'sig-payload', name: 'payload', rows: 2, placeholder: '{"approved": true}' });
  name.value = draft.name;
  payload.value = draft.payload;
  name.addEventListener('input', () => (draft.name = name.value));
  payload.addEventListener('input', () => (draft.payload = payload.value));
  const send = actionButton(
    'Send signal',
    '',
    async () => {
      let data: unknown;
      if (payload.value.trim() !== '') data = JSON.parse(payload.value);
      const out = await act({ action: 'signal', runId, name: name.value, payload: data });
      say(`Signal ${name.value} to ${runId}: ${String(out.outcome)}.`);
    },
    'send-signal',
  );
  return h(
    'fieldset',
    { class: 'signal' },
    h('legend', {}, 'Send a signal'),
    h('label', { for: 'sig-name' }, 'Name'),
    name,
    h('label', { for: 'sig-payload' }, 'Payload (JSON)'),
    payload,
    send,
  );
}
