// One run: its steps as a waterfall, its events as they come, and what can be done to it.
import {
  BASE,
  h,
  append,
  ms,
  when,
  badge,
  runLink,
  pretty,
  api,
  act,
  main,
  live,
  say,
  actionButton,
  decideButtons,
  route,
} from './dom.js';
import type { Child } from './dom.js';
import { signalBox } from './signal.js';
import { stepsOf } from './steps.js';
import type { Caps, RunView, RunEvent } from './types.js';

let source: EventSource | undefined;
let runState: { view: RunView; caps: Caps; events: RunEvent[]; lastSeq: number } | undefined;

export async function showRun(runId: string): Promise<void> {
  const { run, capabilities } = await api<{ run: RunView; capabilities: Caps }>(
    `/api/run?id=${encodeURIComponent(runId)}`,
  );
  const now = route();
  if (now.view !== 'run' || now.id !== runId) return;
  const events = runState?.view.runId === runId ? runState.events : [];
  runState = { view: run, caps: capabilities, events, lastSeq: runState?.view.runId === runId ? runState.lastSeq : 0 };
  renderRun();
  // Its events from the first on opening it (retries, waits, progress); again while it runs (after an approval).
  if (watching !== runId || (!source && run.status === 'running'))
    watchRun(runId, watching === runId ? runState.lastSeq : 0);
}

let watching: string | undefined;
function watchRun(runId: string, after: number): void {
  source?.close();
  watching = runId;
  const es = new EventSource(`${BASE}/api/events?id=${encodeURIComponent(runId)}&after=${after}`);
  source = es;
  const types = [
    'run:start',
    'step:start',
    'step:progress',
    'step:retry',
    'step:end',
    'confirmation:requested',
    'run:end',
  ];
  let pending: ReturnType<typeof setTimeout> | undefined;
  for (const t of types) {
    es.addEventListener(t, (m) => {
      if (!runState || runState.view.runId !== runId) return;
      const e = JSON.parse((m as MessageEvent<string>).data) as RunEvent;
      if (e.seq <= runState.lastSeq) return;
      runState.lastSeq = e.seq;
      runState.events.push(e);
      if (runState.events.length > 500) runState.events.shift();
      live(`live · event ${e.seq} ${e.type}`);
      if (e.type === 'run:end') {
        // The watch ends with the run (or its parking at a gate): no reconnect.
        es.close();
        if (source === es) source = undefined;
      }
      if (e.type === 'run:end' || e.type === 'confirmation:requested' || e.type === 'step:end') {
        // The recorded run has what the event announced: read it again (at most every 50 ms).
        pending ??= setTimeout(() => {
          pending = undefined;
          void showRun(runId).catch(() => undefined);
        }, 50);
      } else renderRun();
    });
  }
  es.addEventListener('error', (m) => {
    const data = (m as MessageEvent<string>).data;
    if (typeof data === 'string') {
      // The watch ended (an unknown or expired run, or cut off): the recorded view stays.
      es.close();
      if (source === es) source = undefined;
      live('not live');
    }
  });
  es.addEventListener('open', () => live('live'));
}

function renderRun(): void {
  if (!runState) return;
  const { view: r, caps, events } = runState;
  const steps = stepsOf(runState);
  const retries = new Map<string, RunEvent[]>();
  for (const e of events)
    if (e.type === 'step:retry' && e.step) retries.set(e.step, [...(retries.get(e.step) ?? []), e]);
  const progress = new Map<string, unknown>();
  for (const e of events) if (e.type === 'step:progress' && e.step) progress.set(e.step, e.data);
  const t0 = Math.min(
    ...steps.map((st) => Date.parse(st.startedAt)).filter(Number.isFinite),
    r.startedAt ? Date.parse(r.startedAt) : Infinity,
  );
  const now = Date.now();
  const ends = steps.map(
    (st) => Date.parse(st.startedAt) + (st.status === 'running' ? now - Date.parse(st.startedAt) : st.latencyMs),
  );
  const span = Math.max(1, r.totalLatencyMs ?? 0, ...ends.map((e) => e - t0));

  const actions: Child[] = [];
  if (!caps.readOnly) {
    if (r.status === 'awaiting_confirmation') actions.push(decideButtons(r.runId, caps, () => void showRun(r.runId)));
    if (r.status === 'running' || r.status === 'awaiting_confirmation') {
      actions.push(
        actionButton(
          'Cancel run',
          'danger',
          async () => {
            const out = await act({ action: 'cancel', runId: r.runId });
            say(`Run ${r.runId}: ${String(out.outcome)}.`);
            await showRun(r.runId);
          },
          'cancel-run',
        ),
      );
    }
    if (r.status === 'failed' && caps.rerun) {
      actions.push(
        actionButton(
          'Re-run',
          '',
          async () => {
            const out = await act({ action: 'rerun', runId: r.runId });
            if (typeof out.runId === 'string') location.hash = `#/run/${encodeURIComponent(out.runId)}`;
            else say(`Run ${r.runId} could not be re-run: ${String(out.outcome)}.`, true);
          },
          'rerun',
        ),
      );
    }
  }
  const signalForm =
    !caps.readOnly && caps.signal && (r.status === 'running' || r.status === 'awaiting_confirmation')
      ? signalBox(r.runId)
      : null;

  const waterfall = h(
    'ol',
    { class: 'waterfall', 'aria-label': 'Steps' },
    steps.map((st) => {
      const start = Date.parse(st.startedAt) - t0;
      const dur = st.status === 'running' ? now - Date.parse(st.startedAt) : st.latencyMs;
      const bar = h('span', { class: `bar s-${st.status}` });
      bar.style.left = `${Math.max(0, (100 * start) / span)}%`;
      bar.style.width = `${Math.max(0.5, (100 * dur) / span)}%`;
      const tries = retries.get(st.id) ?? [];
      const err = st.error;
      const facts: Child[] = [
        h('span', {}, badge(st.status)),
        st.tool ? h('span', {}, 'tool ', h('code', {}, st.tool)) : null,
        st.attempts > 0 ? h('span', {}, `${st.attempts} attempt${st.attempts === 1 ? '' : 's'}`) : null,
        h('span', {}, ms(dur)),
        tries.length
          ? h(
              'span',
              {},
              `${tries.length} retr${tries.length === 1 ? 'y' : 'ies'}, ` +
                `waited ${ms(tries.reduce((a, e) => a + Number(e.data.delayMs ?? 0), 0))}`,
            )
          : null,
        err && typeof err.retryAfterMs === 'number' ? h('span', {}, `Retry-After ${ms(err.retryAfterMs)}`) : null,
        st.decidedBy ? h('span', {}, `decided by ${st.decidedBy}`) : null,
        r.compensated?.includes(st.id) ? h('span', { class: 'badge s-compensated' }, 'compensated') : null,
      ];
      const detail: Child[] = [];
      for (const e of tries)
        detail.push(
          h(
            'p',
            { class: 'retry' },
            `attempt ${String(e.data.attempt)} failed (${String(e.data.category)}/${String(e.data.code)}): ` +
              `${String(e.data.message)} — retried after ${ms(Number(e.data.delayMs))}`,
          ),
        );
      if (progress.has(st.id)) detail.push(h('h4', {}, 'Progress'), h('pre', {}, pretty(progress.get(st.id))));
      if (st.input !== undefined) detail.push(h('h4', {}, 'Input'), h('pre', {}, pretty(st.input)));
      if (st.output !== undefined) detail.push(h('h4', {}, 'Output'), h('pre', {}, pretty(st.output)));
      if (err) detail.push(h('h4', {}, 'Error'), h('pre', {}, pretty(err)));
      // Sub-chains, forEach items and whatever else a step kind records on its trace entry.
      for (const [key, value] of Object.entries(st.extra ?? {}))
        detail.push(h('h4', {}, key), h('pre', {}, pretty(value)));
      const item = h(
        'li',
        { class: st.depth ? 'step nested' : 'step' },
        h(
          'div',
          { class: 'step-head' },
          h('span', { class: 'step-name' }, `${st.stepNumber}. `, h('strong', {}, st.id)),
          h('span', { class: 'track', 'aria-hidden': 'true' }, bar),
        ),
        h('div', { class: 'facts' }, facts),
        detail.length ? h('details', {}, h('summary', {}, `Details of ${st.id}`), detail) : null,
      );
      if (st.depth) item.style.marginLeft = `${1.25 * st.depth}rem`;
      return item;
    }),
  );

  const root = main();
  const focused = document.activeElement?.id;
  root.replaceChildren();
  append(root, [
    h('p', {}, h('a', { href: '#/' }, '← All runs')),
    h(
      'section',
      { 'aria-labelledby': 'run-h' },
      h('h2', { id: 'run-h' }, 'Run ', h('code', {}, r.runId), ' ', badge(r.status)),
      h(
        'dl',
        { class: 'meta' },
        h('dt', {}, 'Chain'),
        h('dd', {}, r.chain),
        r.rerunOf ? [h('dt', {}, 'Re-run of'), h('dd', {}, runLink(r.rerunOf))] : null,
        h('dt', {}, 'Started'),
        h('dd', {}, when(r.startedAt ?? (Number.isFinite(t0) ? t0 : undefined))),
        r.totalLatencyMs !== undefined ? [h('dt', {}, 'Took'), h('dd', {}, ms(r.totalLatencyMs))] : null,
        r.decidedBy ? [h('dt', {}, 'Decided by'), h('dd', {}, r.decidedBy)] : null,
        r.declinedStep ? [h('dt', {}, 'Declined at'), h('dd', {}, r.declinedStep)] : null,
      ),
      r.awaiting
        ? h(
            'div',
            { class: 'card' },
            h(
              'p',
              {},
              'Waiting for approval at ',
              h('code', {}, r.awaiting.step),
              ` (tool ${r.awaiting.tool}), until ${when(r.awaiting.expiresAt)}:`,
            ),
            h('p', { class: 'question' }, r.awaiting.prompt),
          )
        : null,
      actions.length ? h('div', { class: 'actions' }, actions) : null,
      signalForm,
    ),
    h(
      'section',
      { 'aria-labelledby': 'steps-h' },
      h('h2', { id: 'steps-h' }, 'Steps'),
      steps.length ? waterfall : h('p', { class: 'muted' }, 'No step has run yet.'),
    ),
    r.error
      ? h('section', { 'aria-labelledby': 'err-h' }, h('h2', { id: 'err-h' }, 'Error'), h('pre', {}, pretty(r.error)))
      : null,
    r.compensated?.length || r.compensationFailures?.length
      ? h(
          'section',
          { 'aria-labelledby': 'comp-h' },
          h('h2', { id: 'comp-h' }, 'Compensation'),
          r.compensated?.length ? h('p', {}, `Undone (newest first): ${r.compensated.join(', ')}`) : null,
          (r.compensationFailures ?? []).map((f) => [
            h('p', { class: 'bad' }, `Undo of ${f.step} failed:`),
            h('pre', {}, pretty(f.error)),
          ]),
        )
      : null,
    r.output !== undefined
      ? h('section', { 'aria-labelledby': 'out-h' }, h('h2', { id: 'out-h' }, 'Output'), h('pre', {}, pretty(r.output)))
      : null,
    events.length
      ? h(
          'details',
          { class: 'events' },
          h('summary', {}, `Events (${events.length})`),
          h(
            'ol',
            {},
            events.map((e) =>
              h(
                'li',
                {},
                h('code', {}, `#${e.seq} ${e.type}${e.step ? ` ${e.step}` : ''}`),
                ' ',
                new Date(e.at).toLocaleTimeString(),
              ),
            ),
          ),
        )
      : null,
  ]);
  if (focused) document.getElementById(focused)?.focus();
}

/** Stops following the run shown (the page went back to the list), and forgets it. */
export function leaveRun(): void {
  source?.close();
  source = undefined;
  watching = undefined;
}

/** Forgets the run shown: the next one starts with no events. */
export function forgetRun(): void {
  runState = undefined;
}
