// The chainkit side of bench:flow alone, for a CPU profile (not part of `npm run bench`):
//   npx tsup bench/profile-flow.ts --no-config --format esm --target node20 --out-dir .bench --silent && node --cpu-prof .bench/profile-flow.js
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker } from '../src/index.js';

const Item = z.object({ id: z.string(), title: z.string(), done: z.boolean() });
const getItem = defineTool({
  name: 'get_item',
  description: 'Read an item',
  input: z.object({ id: z.string() }),
  output: Item,
  effect: 'read',
});
const saveItem = defineTool({
  name: 'save_item',
  description: 'Mark an item done',
  input: z.object({ id: z.string(), done: z.boolean() }),
  output: z.object({ item: Item }),
});
const listItems = defineTool({
  name: 'list_items',
  description: 'List items',
  input: z.object({ n: z.number() }),
  output: z.object({ items: z.array(z.object({ id: z.string() })) }),
  effect: 'read',
});
const rows = Array.from({ length: 100 }, (_, i) => ({ id: `item-${i}` }));
const impl = {
  list_items: async () => ({ items: rows }),
  get_item: async ({ id }: { id: string }) => ({ id, title: `Item ${id}`, done: false }),
  save_item: async ({ id, done }: { id: string; done: boolean }) => ({ item: { id, title: `Item ${id}`, done } }),
};
const doOne = chain('do_one', { input: z.object({ id: z.string() }) })
  .tool('get', getItem, (ref) => ({ id: ref('input', 'id') }))
  .tool('save', saveItem, (ref) => ({ id: ref('get', 'id'), done: true }))
  .output((s) => s.results.save.item);
const doAll = chain('do_all', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .tool('list', listItems, (ref) => ({ n: ref('input', 'n') }))
  .forEach('done', (ref) => ({
    over: ref('list', 'items'),
    chain: doOne,
    input: (item) => ({ id: item('id') }),
    concurrency: 8,
  }))
  .output((s) => s.results.done.length);
const runner = createRunner({ invoker: functionInvoker(impl), tools: [listItems, getItem, saveItem] });
if (!process.env.NOEV) runner.events.on('step:end', () => undefined);
if (!process.env.NOEV) runner.events.on('item:end', () => undefined);
const rounds = Number(process.env.FLOW_ROUNDS ?? 3000);
const t = performance.now();
const cpu = process.cpuUsage();
for (let i = 0; i < rounds; i++) {
  const r = await runner.run(doAll, { n: 100 });
  if (r.status !== 'completed') throw new Error(r.status);
}
const used = process.cpuUsage(cpu);
console.log(
  `${((performance.now() - t) / rounds).toFixed(3)} ms a forEach, ${((used.user + used.system) / 1000 / rounds).toFixed(3)} ms CPU`,
);
await runner.close();
