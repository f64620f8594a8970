// Bench: the heap of a process whose watcher reads nothing while a run emits 100,000 progress events
// (memory run store, default 10,000 events kept per run). Run: npx tsx --expose-gc bench/watch.ts
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, memoryRunStore, ref } from '../src/index.js';

const EVENTS = 100_000;
const emit = defineTool({ name: 'emit', description: 'e', input: z.object({ n: z.number() }), output: z.object({ n: z.number() }), effect: 'read' });
const chain = defineChain({ name: 'chatty', input: z.object({ n: z.number() }), timeoutMs: 120_000, steps: [{ id: 'emit', tool: emit, input: { n: ref('input', 'n') } }] });
const runner = createRunner({
  invoker: functionInvoker([emit], {
    emit: async ({ n }, call) => {
      for (let i = 1; i <= n; i++) {
        call.progress({ done: i, of: n, note: 'x'.repeat(64) });
        if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
      }
      return { n };
    },
  }),
  chains: [chain],
  stores: { runs: memoryRunStore() },
});
const gc = (globalThis as { gc?: () => void }).gc;
const heap = (): number => {
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

const before = heap();
const { events, result } = runner.stream(chain, { n: EVENTS });
const reader = events[Symbol.asyncIterator]();
await reader.next(); // reads the first event, then nothing
let peak = 0;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed / 2 ** 20)), 5);
await result;
clearInterval(sampler);
const after = heap();
const cut = await (async () => {
  try {
    for (;;) if ((await reader.next()).done) return 'no';
  } catch (error) {
    return (error as Error).name;
  }
})();
console.log('| watcher reading nothing, memory store | events | heap before | heap peak | heap after | reader |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(`| ${EVENTS.toLocaleString('en')} progress events of ~120 B | ${EVENTS} | ${before.toFixed(1)} MiB | ${peak.toFixed(1)} MiB | ${after.toFixed(1)} MiB | cut off: ${cut} |`);
await runner.close();
