// The forEach workload of `npm run bench:flow` (bench/for-each.ts) and its profile (bench/profile-flow.ts):
// three tools over items, and a chain running a read-then-write sub-chain per listed item.
import { z } from 'zod';
import { chain, defineTool } from '../src/index.js';

export const Item = z.object({ id: z.string(), title: z.string(), done: z.boolean() });
export const getItem = defineTool({
  name: 'get_item',
  description: 'Read an item',
  input: z.object({ id: z.string() }),
  output: Item,
  effect: 'read',
});
export const saveItem = defineTool({
  name: 'save_item',
  description: 'Mark an item done',
  input: z.object({ id: z.string(), done: z.boolean() }),
  output: z.object({ item: Item }),
});
export const listItems = defineTool({
  name: 'list_items',
  description: 'List items',
  input: z.object({ n: z.number() }),
  output: z.object({ items: z.array(z.object({ id: z.string() })) }),
  effect: 'read',
});

/**
 * The tools' implementations over `items` rows: answered at once, or after `latencyMs()` ms.
 *
 * @example
 * ```ts
 * const impl = flowImpl(100, () => 0);
 * ```
 */
export function flowImpl(items: number, latencyMs: () => number) {
  const rows = Array.from({ length: items }, (_, i) => ({ id: `item-${i}` }));
  const wait = (): Promise<void> | undefined =>
    latencyMs() > 0 ? new Promise((r) => setTimeout(r, latencyMs())) : undefined;
  return {
    list_items: async () => (await wait(), { items: rows }),
    get_item: async ({ id }: { id: string }) => (await wait(), { id, title: `Item ${id}`, done: false }),
    save_item: async ({ id, done }: { id: string; done: boolean }) => (
      await wait(),
      { item: { id, title: `Item ${id}`, done } }
    ),
  };
}

/**
 * `do_all`: lists items, then runs `do_one` (read, then write) for each, `concurrency` at once.
 *
 * @example
 * ```ts
 * const doAll = forEachChain(8);
 * ```
 */
export function forEachChain(concurrency: number) {
  const doOne = chain('do_one', { input: z.object({ id: z.string() }) })
    .tool('get', getItem, (ref) => ({ id: ref('input', 'id') }))
    .tool('save', saveItem, (ref) => ({ id: ref('get', 'id'), done: true }))
    .output((s) => s.results.save.item);
  return chain('do_all', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
    .tool('list', listItems, (ref) => ({ n: ref('input', 'n') }))
    .forEach('done', (ref) => ({
      over: ref('list', 'items'),
      chain: doOne,
      input: (item) => ({ id: item('id') }),
      concurrency,
    }))
    .output((s) => s.results.done.length);
}
