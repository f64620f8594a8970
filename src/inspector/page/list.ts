// The runs list: the approvals inbox and the runs, filtered.
import { STATUSES, LABEL, h, ms, when, badge, runLink, api, main, decideButtons, route, refresh } from './dom.js';
import type { Overview } from './types.js';
import { healthSection } from './health.js';

const filter: { status: string; chain: string } = { status: '', chain: '' };
let overviewSeq = 0;

export async function showList(): Promise<void> {
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
