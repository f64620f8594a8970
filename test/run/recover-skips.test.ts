// Issue 26 §4: why `recover()` returned nothing. The runner's logger gets a debug line for each run
// in flight it left alone, naming the run and the reason: not this runner's chain, another
// definition of it, or its owner's lease still live.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, ref, type Runner } from '../../src/index.js';
import type { RunStore } from '../../src/stores/index.js';
import { memoryRunStore } from '../../src/testing/index.js';

const step = defineTool({
  name: 'step',
  description: 's',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const chainOf = (name: string, last = 'b') =>
  defineChain({
    name,
    input: z.object({ n: z.number() }),
    timeoutMs: 600_000,
    steps: [
      { id: 'a', tool: step, input: { n: ref('input', 'n') } },
      { id: last, tool: step, input: { n: ref('a', 'n') } },
    ],
  });
const orders = chainOf('orders');
const ordersV2 = chainOf('orders', 'b2'); // another definition: another fingerprint
const mail = chainOf('mail');

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});

const never = (): Promise<never> => new Promise(() => {});
function make(
  store: RunStore,
  now: () => number,
  chains: ReturnType<typeof chainOf>[],
  options: { hang?: boolean; logger?: ReturnType<typeof spyLogger> } = {},
) {
  let calls = 0;
  const invoker = functionInvoker([step], { step: async ({ n }) => (++calls > 1 && options.hang ? never() : { n }) });
  const runner = createRunner({
    invoker,
    chains,
    stores: { runs: store },
    now,
    leaseMs: 1_000,
    ...(options.logger && { logger: options.logger }),
  });
  runners.push(runner);
  return runner;
}
const spyLogger = () => ({ debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() });
const skipLines = (logger: ReturnType<typeof spyLogger>) =>
  logger.debug.mock.calls
    .filter(([, msg]) => typeof msg === 'string' && msg.includes('skipped run'))
    .map(([obj, msg]) => ({ ...(obj as { runId: string; chain: string; reason: string }), msg: msg as string }));

describe('recover() says why it left runs alone', () => {
  it('names each run in flight it did not take, with the reason, at debug level', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    // Two runs whose owners die mid-run (they hang in step b and their clock never moves) ...
    void make(store, now, [orders], { hang: true }).run(orders, { n: 1 }, { runId: 'old-orders' });
    void make(store, now, [mail], { hang: true }).run(mail, { n: 2 }, { runId: 'mail-run' });
    await new Promise((r) => setTimeout(r, 20));
    t += 5_000; // their leases expired
    // ... and one whose owner is alive.
    void make(store, now, [ordersV2], { hang: true }).run(ordersV2, { n: 3 }, { runId: 'live-orders' });
    await new Promise((r) => setTimeout(r, 20));

    const logger = spyLogger();
    const heir = make(store, now, [ordersV2], { logger });
    expect(await heir.recover()).toEqual([]);
    const lines = skipLines(logger).sort((a, b) => a.runId.localeCompare(b.runId));
    expect(lines.map((l) => [l.runId, l.chain, l.reason])).toEqual([
      ['live-orders', 'orders', 'lease_live'],
      ['mail-run', 'mail', 'unknown_chain'],
      ['old-orders', 'orders', 'chain_changed'],
    ]);
    expect(lines[1]!.msg).toContain(
      "recover() skipped run mail-run (chain mail): this runner has no chain named 'mail'",
    );
    expect(lines[2]!.msg).toContain('another definition of chain orders');
    expect(lines[0]!.msg).toMatch(/holds its lease for \d+ ms more/);
    // Untouched: still in flight under their owners.
    expect((await heir.getRun('mail-run'))?.status).toBe('running');
    expect((await heir.getRun('old-orders'))?.status).toBe('running');
  });

  it('a recovered run is not reported as skipped; without a logger nothing is read', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    void make(store, now, [orders], { hang: true }).run(orders, { n: 1 }, { runId: 'o1' });
    await new Promise((r) => setTimeout(r, 20));
    t += 5_000;
    const logger = spyLogger();
    const heir = make(store, now, [orders], { logger });
    expect((await heir.recover()).map((r) => [r.runId, r.status])).toEqual([['o1', 'completed']]);
    expect(skipLines(logger)).toEqual([]);

    const listRuns = vi.spyOn(store, 'listRuns');
    await make(store, now, [orders]).recover();
    expect(listRuns).not.toHaveBeenCalled();
  });
});
