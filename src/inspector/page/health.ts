// The health section of the runs list: tools, breakers, what was learned (a graph of transitions).
import { h, s, ms, when } from './dom.js';
import type { Overview } from './types.js';

export function healthSection(data: Overview): HTMLElement {
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
