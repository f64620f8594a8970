// `npm run bench:inspector`: the cost of an open inspector page on the runner. The same durable
// chain (memory run store, 3 tool steps, events logged) runs sequentially, interleaved rounds of:
//   none    no inspector;
//   mounted the inspector mounted, no page open;
//   open    a page open, as the browser keeps it: the live stream (/api/live, nudged on every run),
//           the run view's event stream of a run emitting events, and the overview read again on
//           each nudge (at most every 100 ms, as the page does).
// Rows: median runs/s of the rounds (rotated order, a GC between rounds), and the time a run takes
// more (or less: noise) than with `none`. On a busy machine the noise is larger than the cost.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, memoryIdempotencyStore, ref } from '../src/index.js';
import { inspector, toNodeHandler } from '../src/inspector/index.js';
import { memoryRunStore } from '../src/testing/index.js';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const RUNS = Number(process.env.RUNS ?? 1000);

const a = defineTool({
  name: 'a',
  description: 'a',
  effect: 'read',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
});
const b = defineTool({
  name: 'b',
  description: 'b',
  effect: 'read',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
});
const c = defineTool({
  name: 'c',
  description: 'c',
  effect: 'read',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
});
const chain = defineChain({
  name: 'bench_inspector',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'a', tool: a, input: { n: ref('input', 'n') } },
    { id: 'b', tool: b, input: { n: ref('a', 'n') } },
    { id: 'c', tool: c, input: { n: ref('b', 'n') } },
  ],
});
const invoker = functionInvoker([a, b, c], {
  a: async ({ n }) => ({ n: n + 1 }),
  b: async ({ n }) => ({ n: n + 1 }),
  c: async ({ n }) => ({ n: n + 1 }),
});

type Mode = 'none' | 'mounted' | 'open';

async function round(mode: Mode): Promise<number> {
  const idempotency = memoryIdempotencyStore();
  const runner = createRunner({
    invoker,
    tools: [a, b, c],
    chains: [chain],
    stores: { idempotency, runs: memoryRunStore({ idempotency, maxEnded: 100_000 }) },
  });
  const stops: (() => Promise<void> | void)[] = [];
  if (mode !== 'none') {
    const handle = inspector(runner, { basePath: '/i', authorize: () => true });
    if (mode === 'open') {
      const server = createServer(toNodeHandler(handle));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const abort = new AbortController();
      // The live stream: each nudge reads the overview again (as the page does, once per nudge).
      const live = await fetch(`${origin}/i/api/live`, { signal: abort.signal });
      const reader = live.body!.getReader();
      void (async () => {
        const decoder = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
          if (done) return;
          if (decoder.decode(value).includes('event: changed'))
            await fetch(`${origin}/i/api/overview`, { signal: abort.signal })
              .then((r) => r.text())
              .catch(() => undefined);
        }
      })();
      // The run view of the first run of the round: its events streamed.
      const watched = 'watched-0';
      void fetch(`${origin}/i/api/events?id=${watched}`, { signal: abort.signal })
        .then((r) => r.text())
        .catch(() => undefined);
      stops.push(() => {
        abort.abort();
        server.closeAllConnections();
        server.close();
      });
    }
  }
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) {
    const r = await runner.run(chain, { n: i }, { runId: i === 0 ? 'watched-0' : undefined });
    if (r.status !== 'completed') throw new Error(`run ${i} ${r.status}`);
  }
  const perSec = RUNS / ((performance.now() - t0) / 1000);
  for (const s of stops) await s();
  await runner.close();
  return perSec;
}

const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const results: Record<Mode, number[]> = { none: [], mounted: [], open: [] };
await round('none'); // warm-up
const MODES = ['none', 'mounted', 'open'] as const;
const gc = (globalThis as { gc?: () => void }).gc;
for (let i = 0; i < ROUNDS; i++) {
  // Each round in another order, collected in between: no mode always pays for the garbage of another.
  for (let j = 0; j < MODES.length; j++) {
    const mode = MODES[(i + j) % MODES.length]!;
    gc?.();
    results[mode].push(await round(mode));
  }
}
const base = median(results.none);
console.log('| inspector | durable runs/s (median) | time per run vs none |');
console.log('|---|---:|---:|');
for (const mode of ['none', 'mounted', 'open'] as const) {
  const m = median(results[mode]);
  console.log(
    `| ${mode === 'none' ? 'none' : mode === 'mounted' ? 'mounted, no page open' : 'a page open (live stream + a run view + overview reads)'} | ${Math.round(m).toLocaleString('en')} | ${mode === 'none' ? '–' : `${base / m >= 1 ? '+' : '−'}${Math.abs((base / m - 1) * 100).toFixed(1)} %`} |`,
  );
}
console.log(
  `${ROUNDS} rounds of ${RUNS} sequential runs (memory run store, 3 steps each), interleaved; node ${process.version}, ${new Date().toISOString().slice(0, 10)}${gc ? '' : ' (no --expose-gc)'}`,
);
