// `npm run bench:flow`: a `forEach` over 100 items against a hand-written p-limit loop calling the
// same two tools with zod in and out, measured in the same run (issue 21: at most 1.2×). Each item
// reads then writes (the write's output checked); both sides run 8 items at once. chainkit runs
// with its whole per-call pipeline (retry, timeout, breaker, idempotency for the write), events and
// traces (item entries nested); the baseline is what a user would write without it.
import pLimit from 'p-limit';
import pRetry from 'p-retry';
import pTimeout from 'p-timeout';
import { z } from 'zod';
import { createRunner, functionInvoker, type Runner } from '../src/index.js';
import { flowImpl, forEachChain, getItem, Item, listItems, saveItem } from './flow-fixture.js';

const ITEMS = 100;
const CONCURRENCY = 8;
const ROUNDS = Number(process.env.FLOW_ROUNDS ?? 300);

// The tools themselves: answered at once (what is measured is the orchestration around them), or
// after 1 ms (a fast local service), where the orchestration's share is what a user would see.
let latencyMs = 0;
const impl = flowImpl(ITEMS, () => latencyMs);
const doAll = forEachChain(CONCURRENCY);

async function viaChainkit(runner: Runner): Promise<number> {
  const r = await runner.run(doAll, { n: ITEMS });
  if (r.status !== 'completed') throw new Error(`forEach run ${r.status}`);
  return r.output;
}

// The hand-written loop: validate input, call, validate output, for each tool, 8 at once with p-limit.
const call = async <I, O>(
  tool: { input: z.ZodType<I>; output: z.ZodType<O> },
  fn: (input: I) => Promise<unknown>,
  input: unknown,
): Promise<O> => tool.output.parse(await fn(tool.input.parse(input)));
type Impl = {
  list_items: (input: { n: number }) => Promise<unknown>;
  get_item: (input: { id: string }) => Promise<unknown>;
  save_item: (input: { id: string; done: boolean }) => Promise<unknown>;
};
async function viaPLimit(tools: Impl = impl): Promise<number> {
  const { items } = await call(
    listItems as never as { input: z.ZodType<{ n: number }>; output: z.ZodType<{ items: { id: string }[] }> },
    tools.list_items,
    { n: ITEMS },
  );
  const limit = pLimit(CONCURRENCY);
  const done = await Promise.all(
    items.map((item) =>
      limit(async () => {
        const got = await call(
          getItem as never as { input: z.ZodType<{ id: string }>; output: z.ZodType<z.infer<typeof Item>> },
          tools.get_item,
          { id: item.id },
        );
        const saved = await call(
          saveItem as never as {
            input: z.ZodType<{ id: string; done: boolean }>;
            output: z.ZodType<{ item: z.infer<typeof Item> }>;
          },
          tools.save_item,
          { id: got.id, done: true },
        );
        return saved.item;
      }),
    ),
  );
  return done.length;
}

// The same loop as a production one would be written: each call also under p-timeout and p-retry
// (what `npm run bench`'s baseline does). Shown beside the target's baseline, not instead of it.
const guarded =
  <I>(fn: (input: I) => Promise<unknown>) =>
  (input: I): Promise<unknown> =>
    pRetry(() => pTimeout(fn(input), { milliseconds: 5_000 }), { retries: 3, minTimeout: 100 });
const guardedImpl: Impl = {
  list_items: guarded(impl.list_items),
  get_item: guarded(impl.get_item),
  save_item: guarded(impl.save_item),
};
const viaPLimitGuarded = (): Promise<number> => viaPLimit(guardedImpl);

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const runner = createRunner({ invoker: functionInvoker(impl), tools: [listItems, getItem, saveItem] });
// Listeners attached, as an app that watches its runs would have them.
let events = 0;
runner.events.on('step:end', () => void events++);
runner.events.on('item:end', () => void events++);
async function measure(label: string, rounds: number): Promise<void> {
  for (let i = 0; i < Math.min(30, rounds); i++) {
    await viaChainkit(runner);
    await viaPLimit();
    await viaPLimitGuarded();
  }
  const a: number[] = [];
  const b: number[] = [];
  const g: number[] = [];
  // Alternated, so drift on a shared machine touches all alike.
  for (let i = 0; i < rounds; i++) {
    let t = performance.now();
    await viaChainkit(runner);
    a.push(performance.now() - t);
    t = performance.now();
    await viaPLimit();
    b.push(performance.now() - t);
    t = performance.now();
    await viaPLimitGuarded();
    g.push(performance.now() - t);
  }
  const ck = median(a);
  const base = median(b);
  const guardedBase = median(g);
  console.log(
    `forEach over ${ITEMS} items (2 tools each, ${CONCURRENCY} at once), ${label}, median of ${rounds} rounds`,
  );
  console.log(`  chainkit forEach          ${ck.toFixed(2)} ms  (${((ck * 1000) / ITEMS).toFixed(0)} µs an item)`);
  console.log(`  p-limit + zod in and out  ${base.toFixed(2)} ms  (${((base * 1000) / ITEMS).toFixed(0)} µs an item)`);
  console.log(`  ratio                     ${(ck / base).toFixed(2)}×  (target ≤ 1.2×)`);
  console.log(
    `  p-limit + zod + p-retry + p-timeout per call  ${guardedBase.toFixed(2)} ms  (chainkit ${(ck / guardedBase).toFixed(2)}× of it)`,
  );
}

try {
  await measure('tools answering at once', ROUNDS);
  latencyMs = 1;
  await measure('tools taking 1 ms', Math.max(20, Math.floor(ROUNDS / 10)));
  console.log(`  [${events} events seen by listeners]`);
} finally {
  await runner.close();
}
