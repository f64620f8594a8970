// The inspector's page: plain DOM, no framework. Built by scripts/build-inspector.mjs into
// src/inspector/assets.ts (minified) and served from the inspector's own path. Text is only ever
// set as text (never parsed as HTML); styles come from app.css (the CSP allows no inline style).

type Json = Record<string, unknown>;
interface Summary {
  runId: string;
  chain: string;
  status: string;
  startedAt: number;
  endedAt?: number;
  steps: number;
  error?: { category: string; code: string };
  awaiting?: { step: string; question: string };
}
interface Caps {
  readOnly: boolean;
  signal: boolean;
  rerun: boolean;
}
interface Step {
  stepNumber: number;
  id: string;
  tool?: string;
  status: string;
  attempts: number;
  latencyMs: number;
  startedAt: string;
  input?: unknown;
  output?: unknown;
  error?: Json;
  decidedBy?: string;
  children?: Step[];
  extra?: Json;
  /** How deep in sub-chains (0: a step of the run itself). */
  depth?: number;
}
interface RunView {
  runId: string;
  chain: string;
  status: string;
  rerunOf?: string;
  traceStatus?: string;
  startedAt?: string;
  endedAt?: string;
  totalLatencyMs?: number;
  decidedBy?: string;
  journaled: string[];
  steps: Step[];
  output?: unknown;
  error?: Json;
  awaiting?: { step: string; tool: string; prompt: string; expiresAt: string };
  declinedStep?: string;
  compensated?: string[];
  compensationFailures?: { step: string; error: Json }[];
}
interface RunEvent {
  seq: number;
  at: number;
  type: string;
  step?: string;
  data: Json;
}
interface Overview {
  capabilities: Caps;
  counts: {
    byStatus: Record<string, number>;
    byChain: Record<string, Record<string, number>>;
    sampled: number;
    more: boolean;
  };
  inbox: Summary[];
  runs: Summary[];
  cursor?: string;
  breakers: { tool: string; state: string; at: number }[];
  rateLimits: { tool: string; refusals: number; lastWaitMs?: number; lastCode: string; at: number }[];
  learned: {
    transitions: Record<string, Record<string, { count: number; successRate: number; avgGapMs: number }>>;
    commonChains: { tools: string[]; occurrences: number; avgSuccessRate: number; avgTotalDurationMs: number }[];
    timing: {
      tool: string;
      estimatedDurationMs: number;
      confidence: string;
      source: string;
      samples: number;
      timeoutMs: number;
      willTimeout: boolean;
    }[];
  };
}

const meta = (name: string): string => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';
const BASE = meta('chainkit-base');
const TOKEN = meta('chainkit-csrf');
const STATUSES = ['awaiting_confirmation', 'running', 'failed', 'completed', 'declined'];
const LABEL: Record<string, string> = {
  awaiting_confirmation: 'awaiting approval',
  running: 'running',
  failed: 'failed',
  completed: 'completed',
  declined: 'declined',
};

type Child = Node | string | number | null | undefined | false | Child[];
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | number | ((e: Event) => void) | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}
function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}
const SVG = 'http://www.w3.org/2000/svg';
function s(tag: string, attrs: Record<string, string | number>, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

const ms = (n: number | undefined): string =>
  n === undefined || !Number.isFinite(n)
    ? '–'
    : n < 1000
      ? `${Math.round(n)} ms`
      : n < 60_000
        ? `${(n / 1000).toFixed(1)} s`
        : `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`;
const when = (t: number | string | undefined): string => (t === undefined ? '–' : new Date(t).toLocaleString());
const badge = (status: string): HTMLElement => h('span', { class: `badge s-${status}` }, LABEL[status] ?? status);
const runLink = (id: string): HTMLAnchorElement => h('a', { href: `#/run/${encodeURIComponent(id)}` }, id);
const pretty = (v: unknown): string => JSON.stringify(v, null, 2) ?? String(v);

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${BASE}${path}`, { credentials: 'same-origin', headers: { accept: 'application/json' } });
  if (!res.ok)
    throw new Error(`${res.status} ${((await res.json().catch(() => ({}))) as Json).error ?? res.statusText}`);
  return (await res.json()) as T;
}
async function act(body: Json): Promise<Json> {
  const res = await fetch(`${BASE}/api/action`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-chainkit-csrf': TOKEN },
    body: JSON.stringify(body),
  });
  const out = (await res.json().catch(() => ({}))) as Json;
  if (res.status >= 500 || res.status === 403 || res.status === 400)
    throw new Error(String(out.error ?? res.statusText));
  return out;
}

const main = (): HTMLElement => document.getElementById('main')!;
const live = (text: string): void => {
  const el = document.getElementById('live');
  if (el) el.textContent = text;
};
let note: HTMLElement | undefined;
function say(text: string, bad = false): void {
  note?.remove();
  note = h('p', { class: bad ? 'note bad' : 'note', role: bad ? 'alert' : 'status' }, text);
  main().prepend(note);
}

/** A button that runs `fn` once at a time (a second click while it runs does nothing). */
function actionButton(label: string, cls: string, fn: () => Promise<void>): HTMLButtonElement {
  const b = h('button', { type: 'button', class: cls }, label);
  b.addEventListener('click', () => {
    if (b.disabled) return;
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    fn()
      .catch((e: unknown) => say(e instanceof Error ? e.message : String(e), true))
      .finally(() => {
        b.disabled = false;
        b.removeAttribute('aria-busy');
      });
  });
  return b;
}

function decideButtons(runId: string, caps: Caps, after: () => void): HTMLElement | null {
  if (caps.readOnly) return null;
  const decide = (approved: boolean) => async () => {
    const r = await act({ action: 'decide', runId, approved });
    say(
      r.outcome === 'decided'
        ? `Run ${runId}: ${approved ? 'approved' : 'declined'} (${String(r.status)}).`
        : `Run ${runId} was decided already (${String(r.outcome)}).`,
    );
    after();
  };
  return h(
    'span',
    { class: 'actions' },
    actionButton('Approve', 'primary', decide(true)),
    actionButton('Decline', '', decide(false)),
  );
}

// ---------- the runs list ----------

const filter: { status: string; chain: string } = { status: '', chain: '' };
let overviewSeq = 0;

async function showList(): Promise<void> {
  const seq = ++overviewSeq;
  const q = new URLSearchParams();
  if (filter.status) q.set('status', filter.status);
  if (filter.chain) q.set('chain', filter.chain);
  const data = await api<Overview>(`/api/overview?${q.toString()}`);
  if (seq !== overviewSeq || route().view !== 'list') return;
  const focused = document.activeElement?.id;
  const root = main();
  root.replaceChildren(inboxSection(data), runsSection(data), healthSection(data));
  if (focused) document.getElementById(focused)?.focus();
}

function inboxSection(data: Overview): HTMLElement {
  const rows = data.inbox.map((r) =>
    h(
      'li',
      { class: 'card' },
      h(
        'div',
        {},
        runLink(r.runId),
        ' ',
        h('span', { class: 'muted' }, r.chain),
        ' · step ',
        h('code', {}, r.awaiting?.step ?? ''),
      ),
      h('p', { class: 'question' }, r.awaiting?.question ?? ''),
      decideButtons(r.runId, data.capabilities, () => void refresh()),
    ),
  );
  return h(
    'section',
    { 'aria-labelledby': 'inbox-h' },
    h('h2', { id: 'inbox-h' }, 'Approvals inbox ', h('span', { class: 'count' }, data.inbox.length)),
    rows.length ? h('ul', { class: 'inbox' }, rows) : h('p', { class: 'muted' }, 'No run is waiting for approval.'),
  );
}

function runsSection(data: Overview): HTMLElement {
  const { byStatus, byChain, sampled, more } = data.counts;
  const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
  const chip = (value: string, label: string, n: number) => {
    const b = h(
      'button',
      {
        type: 'button',
        class: 'chip',
        id: `f-status-${value || 'all'}`,
        'aria-pressed': String(filter.status === value),
      },
      `${label} `,
      h('span', { class: 'count' }, n),
    );
    b.addEventListener('click', () => {
      filter.status = value;
      void refresh();
    });
    return b;
  };
  const chains = Object.keys(byChain).sort();
  const select = h(
    'select',
    { id: 'f-chain' },
    h('option', { value: '' }, `all chains (${total})`),
    chains.map((c) => h('option', { value: c, selected: filter.chain === c }, `${c} (${byChain[c]?.total ?? 0})`)),
  );
  select.addEventListener('change', () => {
    filter.chain = select.value;
    void refresh();
  });
  const rows = data.runs.map((r) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, runLink(r.runId)),
      h('td', {}, r.chain),
      h('td', {}, badge(r.status)),
      h('td', {}, when(r.startedAt)),
      h('td', {}, r.endedAt !== undefined ? ms(r.endedAt - r.startedAt) : '–'),
      h('td', { class: 'num' }, r.steps),
      h(
        'td',
        {},
        r.error
          ? h('code', {}, `${r.error.category}/${r.error.code}`)
          : r.awaiting
            ? `waits at ${r.awaiting.step}`
            : '',
      ),
    ),
  );
  const byChainRows = chains.map((c) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, c),
      STATUSES.map((st) => h('td', { class: 'num' }, byChain[c]?.[st] ?? 0)),
      h('td', { class: 'num' }, byChain[c]?.total ?? 0),
    ),
  );
  return h(
    'section',
    { 'aria-labelledby': 'runs-h' },
    h('h2', { id: 'runs-h' }, 'Runs'),
    h(
      'div',
      { class: 'filters', role: 'group', 'aria-label': 'Filter by status' },
      chip('', 'all', total),
      STATUSES.map((st) => chip(st, LABEL[st]!, byStatus[st] ?? 0)),
      h('label', { class: 'chain-filter' }, 'Chain ', select),
    ),
    more ? h('p', { class: 'muted' }, `Counts over the newest ${sampled} runs.`) : null,
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { class: 'runs' },
        h(
          'caption',
          {},
          filter.status || filter.chain
            ? `Runs (${[filter.status && LABEL[filter.status], filter.chain].filter(Boolean).join(', ')})`
            : 'Newest runs',
        ),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Run', 'Chain', 'Status', 'Started', 'Duration', 'Steps', 'Error'].map((c) =>
              h('th', { scope: 'col' }, c),
            ),
          ),
        ),
        h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No runs.'))),
      ),
    ),
    chains.length
      ? h(
          'details',
          { class: 'by-chain' },
          h('summary', {}, 'Runs by chain'),
          h(
            'div',
            { class: 'scroll' },
            h(
              'table',
              {},
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  h('th', { scope: 'col' }, 'Chain'),
                  STATUSES.map((st) => h('th', { scope: 'col' }, LABEL[st])),
                  h('th', { scope: 'col' }, 'total'),
                ),
              ),
              h('tbody', {}, byChainRows),
            ),
          ),
        )
      : null,
  );
}

function healthSection(data: Overview): HTMLElement {
  const { learned } = data;
  const breakers = data.breakers.length
    ? h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Tool'),
            h('th', { scope: 'col' }, 'Breaker'),
            h('th', { scope: 'col' }, 'Since'),
          ),
        ),
        h(
          'tbody',
          {},
          data.breakers.map((b) =>
            h(
              'tr',
              {},
              h('th', { scope: 'row' }, b.tool),
              h('td', {}, h('span', { class: `badge b-${b.state}` }, b.state)),
              h('td', {}, when(b.at)),
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'No breaker opened since the inspector started.');
  const limits = data.rateLimits.length
    ? h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Tool', 'Refusals', 'Last wait (Retry-After)', 'Last code'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          data.rateLimits.map((l) =>
            h(
              'tr',
              {},
              h('th', { scope: 'row' }, l.tool),
              h('td', { class: 'num' }, l.refusals),
              h('td', {}, ms(l.lastWaitMs)),
              h('td', {}, h('code', {}, l.lastCode)),
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'No rate-limit refusal or wait seen while a page was open.');
  const timing = learned.timing.length
    ? h(
        'div',
        { class: 'scroll' },
        h(
          'table',
          {},
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Tool', 'Estimate', 'Confidence', 'Source', 'Samples', 'Timeout'].map((c) =>
                h('th', { scope: 'col' }, c),
              ),
            ),
          ),
          h(
            'tbody',
            {},
            learned.timing.map((t) =>
              h(
                'tr',
                {},
                h('th', { scope: 'row' }, t.tool),
                h('td', {}, ms(t.estimatedDurationMs)),
                h('td', {}, t.confidence),
                h('td', {}, t.source),
                h('td', { class: 'num' }, t.samples),
                h('td', { class: t.willTimeout ? 'bad' : '' }, ms(t.timeoutMs)),
              ),
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'Nothing learned yet.');
  const common = learned.commonChains.length
    ? h(
        'ol',
        {},
        learned.commonChains.map((c) =>
          h(
            'li',
            {},
            c.tools.join(' → '),
            h(
              'span',
              { class: 'muted' },
              ` · ${c.occurrences}× · ${Math.round(c.avgSuccessRate * 100)} % ok · ${ms(c.avgTotalDurationMs)}`,
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'No common chain yet (a sequence of 3–5 tools seen 5 times).');
  return h(
    'section',
    { 'aria-labelledby': 'health-h' },
    h('h2', { id: 'health-h' }, 'Health and what the runner learned'),
    h(
      'div',
      { class: 'grid' },
      h('div', {}, h('h3', {}, 'Circuit breakers'), breakers),
      h('div', {}, h('h3', {}, 'Rate limits'), limits),
    ),
    h('h3', {}, 'Learned transitions'),
    graph(learned.transitions),
    h('h3', {}, 'Common chains'),
    common,
    h('h3', {}, 'Timing estimates'),
    timing,
  );
}

/** Which tool follows which: tools on a circle, an arrow per transition, thicker when frequent. */
function graph(transitions: Overview['learned']['transitions']): Element {
  const edges: { from: string; to: string; count: number; ok: number }[] = [];
  for (const [from, row] of Object.entries(transitions))
    for (const [to, t] of Object.entries(row)) edges.push({ from, to, count: t.count, ok: t.successRate });
  if (edges.length === 0) return h('p', { class: 'muted' }, 'No transitions learned yet.');
  const nodes = [...new Set(edges.flatMap((e) => [e.from, e.to]))].slice(0, 24);
  const W = 640,
    H = 360,
    R = Math.min(W, H) / 2 - 50;
  const pos = new Map(
    nodes.map((n, i) => {
      const a = (2 * Math.PI * i) / nodes.length - Math.PI / 2;
      return [n, { x: W / 2 + R * Math.cos(a), y: H / 2 + R * Math.sin(a) }];
    }),
  );
  const max = Math.max(...edges.map((e) => e.count));
  const svg = s(
    'svg',
    { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'graph-t', class: 'graph' },
    s(
      'title',
      { id: 'graph-t' },
      `Learned transitions: ${edges.map((e) => `${e.from} to ${e.to} ${e.count} times`).join('; ')}`,
    ),
    s(
      'defs',
      {},
      s(
        'marker',
        {
          id: 'arrow',
          viewBox: '0 0 10 10',
          refX: 10,
          refY: 5,
          markerWidth: 6,
          markerHeight: 6,
          orient: 'auto-start-reverse',
        },
        s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }),
      ),
    ),
  );
  for (const e of edges) {
    const a = pos.get(e.from),
      b = pos.get(e.to);
    if (!a || !b) continue;
    const title = s('title', {}, `${e.from} → ${e.to}: ${e.count}× · ${Math.round(e.ok * 100)} % ok`);
    if (e.from === e.to) {
      // A tool followed by itself: a loop above its node.
      svg.appendChild(
        s(
          'path',
          {
            d: `M ${a.x - 8} ${a.y - 14} C ${a.x - 34} ${a.y - 64}, ${a.x + 34} ${a.y - 64}, ${a.x + 8} ${a.y - 15}`,
            fill: 'none',
            class: e.ok >= 0.7 ? 'edge' : 'edge weak',
            'stroke-width': 1 + (4 * e.count) / max,
            'marker-end': 'url(#arrow)',
          },
          title,
        ),
      );
      continue;
    }
    const dx = b.x - a.x,
      dy = b.y - a.y,
      len = Math.hypot(dx, dy) || 1;
    const x1 = a.x + (dx / len) * 18,
      y1 = a.y + (dy / len) * 18,
      x2 = b.x - (dx / len) * 22,
      y2 = b.y - (dy / len) * 22;
    svg.appendChild(
      s(
        'line',
        {
          x1,
          y1,
          x2,
          y2,
          class: e.ok >= 0.7 ? 'edge' : 'edge weak',
          'stroke-width': 1 + (4 * e.count) / max,
          'marker-end': 'url(#arrow)',
        },
        title,
      ),
    );
  }
  for (const n of nodes) {
    const p = pos.get(n)!;
    svg.appendChild(
      s(
        'g',
        { class: 'node' },
        s('circle', { cx: p.x, cy: p.y, r: 16 }),
        s('text', { x: p.x, y: p.y + 32, 'text-anchor': 'middle' }, n),
      ),
    );
  }
  return h('div', { class: 'scroll' }, svg);
}

// ---------- one run ----------

let source: EventSource | undefined;
let runState: { view: RunView; caps: Caps; events: RunEvent[]; lastSeq: number } | undefined;

async function showRun(runId: string): Promise<void> {
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

/** Steps from the recorded trace, else (a run in flight) from its events. */
function stepsOf(state: NonNullable<typeof runState>): Step[] {
  const byId = new Map<string, Step>();
  for (const st of state.view.steps) byId.set(st.id, { ...st });
  let n = state.view.steps.length;
  for (const e of state.events) {
    if (!e.step || (byId.has(e.step) && e.type === 'step:start')) continue;
    let st = byId.get(e.step);
    if (!st) {
      st = {
        stepNumber: (e.data.stepNumber as number | undefined) ?? ++n,
        id: e.step,
        status: 'running',
        attempts: 0,
        latencyMs: 0,
        startedAt: new Date(e.at).toISOString(),
      };
      if (typeof e.data.tool === 'string') st.tool = e.data.tool;
      byId.set(e.step, st);
    }
    if (e.type === 'step:end' && st.status === 'running') {
      st.status = String(e.data.status);
      st.attempts = Number(e.data.attempts);
      st.latencyMs = Number(e.data.latencyMs);
      if (e.data.error) st.error = e.data.error as Json;
    }
  }
  const out: Step[] = [];
  // A step that ran chains is followed by their steps (items, iterations), indented under it.
  const add = (st: Step, depth: number): void => {
    out.push({ ...st, depth });
    for (const c of st.children ?? []) add(c, depth + 1);
  };
  const nested = new Set<string>();
  const collect = (st: Step): void => {
    for (const c of st.children ?? []) (nested.add(c.id), collect(c));
  };
  for (const st of byId.values()) collect(st);
  for (const st of [...byId.values()].sort((a, b) => a.stepNumber - b.stepNumber)) {
    if (nested.has(st.id)) continue; // shown under its parent
    add(st, st.children ? 0 : st.id.split('/').length > 1 ? Math.ceil((st.id.split('/').length - 1) / 2) : 0);
  }
  return out;
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
        actionButton('Cancel run', 'danger', async () => {
          const out = await act({ action: 'cancel', runId: r.runId });
          say(`Run ${r.runId}: ${String(out.outcome)}.`);
          await showRun(r.runId);
        }),
      );
    }
    if (r.status === 'failed' && caps.rerun) {
      actions.push(
        actionButton('Re-run', '', async () => {
          const out = await act({ action: 'rerun', runId: r.runId });
          if (typeof out.runId === 'string') location.hash = `#/run/${encodeURIComponent(out.runId)}`;
          else say(`Run ${r.runId} could not be re-run: ${String(out.outcome)}.`, true);
        }),
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
  const focused = document.activeElement?.textContent;
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
  if (focused) for (const b of root.querySelectorAll('button')) if (b.textContent === focused) b.focus();
}

function signalBox(runId: string): HTMLElement {
  const name = h('input', { id: 'sig-name', name: 'name', required: true, autocomplete: 'off' });
  const payload = h('textarea', { id: 'sig-payload', name: 'payload', rows: 2, placeholder: '{"approved": true}' });
  const send = actionButton('Send signal', '', async () => {
    let data: unknown;
    if (payload.value.trim() !== '') data = JSON.parse(payload.value);
    const out = await act({ action: 'signal', runId, name: name.value, payload: data });
    say(`Signal ${name.value} to ${runId}: ${String(out.outcome)}.`);
  });
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

// ---------- routing and liveness ----------

function route(): { view: 'list' } | { view: 'run'; id: string } {
  const m = /^#\/run\/(.+)$/.exec(location.hash);
  return m ? { view: 'run', id: decodeURIComponent(m[1]!) } : { view: 'list' };
}

async function refresh(): Promise<void> {
  const r = route();
  try {
    if (r.view === 'run') await showRun(r.id);
    else {
      source?.close();
      source = undefined;
      watching = undefined;
      await showList();
    }
  } catch (e) {
    say(e instanceof Error ? e.message : String(e), true);
  }
}

let listTimer: ReturnType<typeof setTimeout> | undefined;
function startLive(): void {
  const es = new EventSource(`${BASE}/api/live`);
  es.addEventListener('ready', () => live('live'));
  es.addEventListener('changed', () => {
    listTimer ??= setTimeout(() => {
      listTimer = undefined;
      void refresh();
    }, 30);
  });
  es.addEventListener('error', () => live('reconnecting…'));
  // Runs of other instances: read again now and then.
  setInterval(() => {
    if (route().view === 'list' && document.visibilityState === 'visible') void refresh();
  }, 5_000);
}

window.addEventListener('hashchange', () => {
  runState = undefined;
  void refresh().then(() => main().focus());
});
void refresh();
startLive();
