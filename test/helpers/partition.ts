// The partition scenario both durable run stores are held to (API.md §10): a runner whose store sits
// behind a frozen proxy fails its run `store_unavailable` within the deadline, closes within 5 s,
// reports nothing done that was not recorded, and another runner recovers the run once bytes pass again.
import { expect } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ref, type Runner, type RunnerOptions } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import type { FreezableProxy } from './proxy.js';

const lookup = defineTool({
  name: 'pt_lookup',
  description: 'Reads the item.',
  input: z.object({ sku: z.string() }),
  output: z.object({ sku: z.string(), price: z.number() }),
  effect: 'read',
});
const charge = defineTool({
  name: 'pt_charge',
  description: 'Charges once per key.',
  input: z.object({ amount: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
  idempotent: true,
});
const notify = defineTool({
  name: 'pt_notify',
  description: 'Says it is paid.',
  input: z.object({ payment: z.string() }),
  output: z.object({ sent: z.boolean() }),
  effect: 'read',
});

/** Deadline of the partitioned run: the 3 s. */
export const DEADLINE_MS = 3_000;
/** A lease short enough for the recovering runner not to wait long. */
const LEASE_MS = 800;

const paidChain = (timeoutMs: number) =>
  defineChain({
    name: 'pt_paid',
    input: z.object({ sku: z.string() }),
    timeoutMs,
    steps: [
      { id: 'lookup', tool: lookup, input: { sku: ref('input', 'sku') } },
      { id: 'charge', tool: charge, input: { amount: ref('lookup', 'price') } },
      { id: 'notify', tool: notify, input: { payment: ref('charge', 'id') } },
    ],
  });
/** Pays within the 3 s: a silent store fails it at its deadline. */
export const paid = paidChain(DEADLINE_MS);
/** Pays within 6 s: a client timeout of 1 s fails it early enough for recovery to finish it in time. */
export const paidLater = paidChain(6_000);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A scripted invoker whose `pt_lookup` waits until `release()`; `reached` settles when it is called. */
function gatedInvoker() {
  let release!: () => void;
  let entered!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (entered = r));
  const invoker = createMockInvoker({
    pt_lookup: async () => {
      entered();
      await released;
      return { sku: 'book', price: 12 };
    },
    pt_charge: { ok: { id: 'pay-1' } },
    pt_notify: { ok: { sent: true } },
  });
  return { invoker, release, reached };
}

/** What the scenario runs and expects. */
export interface PartitionCase {
  /** `paid` (store silent until the deadline) or `paidLater` (the client's own timeout fails the store call first). */
  chain: typeof paid;
  /** When the caller gets `store_unavailable`, at the latest (ms after the run started). */
  failsWithinMs: number;
  /** How the recovered run ends: past its deadline, or completed. */
  recovered: 'deadline_exceeded' | 'completed';
  /** How long `runner.close()` may take: 5 s (API.md §10), less where nothing of the store waits for the network. */
  closesWithinMs: number;
  /** Called after `runner.close()`, still partitioned: the app's own shutdown (ending its pool). */
  shutdown?: () => Promise<void>;
}

/**
 * Runs the scenario: `partitioned` stores reach the server through `proxy`, `direct` ones do not.
 *
 * @example
 * ```ts
 * await partitionScenario(proxy, postgresStores(proxiedPool, { schema }), postgresStores(pool, { schema }), { chain: paid, failsWithinMs: 3_250, recovered: 'deadline_exceeded' });
 * ```
 */
export async function partitionScenario(
  proxy: FreezableProxy,
  partitioned: RunnerOptions['stores'],
  direct: RunnerOptions['stores'],
  expected: PartitionCase,
): Promise<void> {
  const chain = expected.chain;
  const runId = `pt-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const gated = gatedInvoker();
  const runner = createRunner({
    invoker: gated.invoker,
    tools: [lookup, charge, notify],
    chains: [chain],
    stores: partitioned,
    leaseMs: LEASE_MS,
  });
  const ends: string[] = [];
  runner.events.on('run:end', (e) => ends.push(`${e.runId}:${e.status}`));
  const started = Date.now();
  const running = runner.run(chain, { sku: 'book' }, { runId });
  await gated.reached; // the first step is in flight: its journal write (and the first sweep) go out frozen
  proxy.freeze();
  gated.release();

  const result = await running;
  expect(result.status === 'failed' && result.error).toMatchObject({
    category: 'unavailable',
    code: 'store_unavailable',
  });
  expect(Date.now() - started).toBeLessThanOrEqual(expected.failsWithinMs);

  const closing = Date.now();
  await runner.close();
  expect(Date.now() - closing).toBeLessThan(Math.min(expected.closesWithinMs, 5_000));
  if (expected.shutdown) {
    const ending = Date.now();
    await expected.shutdown();
    expect(Date.now() - ending).toBeLessThan(5_000);
  }

  const heir = createMockInvoker({
    pt_lookup: { ok: { sku: 'book', price: 12 } },
    pt_charge: { ok: { id: 'pay-1' } },
    pt_notify: { ok: { sent: true } },
  });
  const recoverer: Runner = createRunner({
    invoker: heir,
    tools: [lookup, charge, notify],
    chains: [chain],
    stores: direct,
    leaseMs: LEASE_MS,
  });
  // Nothing reported done that was not recorded: seen from outside the partition the run is still in
  // flight, for recovery; the caller is told which step could not be recorded, no step after it
  // started, and no end was announced.
  const recorded = await recoverer.getRun(runId);
  expect(recorded?.status).toBe('running');
  expect(result.status === 'failed' && result.error.step).toBe('lookup');
  expect(recorded?.steps).not.toContain('lookup');
  const called = result.trace.steps.filter((s) => s.status === 'success').map((s) => s.id);
  expect(called.filter((step) => !recorded!.steps.includes(step))).toEqual(['lookup']);
  expect(gated.invoker.callsTo('pt_charge')).toHaveLength(0);
  expect(ends).toEqual([]);

  proxy.thaw();
  // Writes the closed runner queued may still land once bytes pass (each fenced by its owner): its
  // lease ends at most one lease after close(), then the run is claimed.
  let recovered = await recoverer.recover();
  for (
    const until = Date.now() + 2 * LEASE_MS + 1_000;
    recovered.length === 0 && Date.now() < until;
    recovered = await recoverer.recover()
  )
    await pause(50);
  expect(recovered.map((r) => r.runId)).toEqual([runId]);
  const end = recovered[0]!;
  if (expected.recovered === 'completed') {
    expect(end.status === 'failed' ? end.error : end.status).toBe('completed');
    expect(end.status === 'completed' && end.output).toEqual({ sent: true });
    expect(heir.callsTo('pt_charge')).toHaveLength(1); // the write ran once in all: never on the partitioned runner
  } else {
    // Recovered after its deadline, the run ends there: it keeps its deadline.
    expect(end.status === 'failed' && end.error.code).toBe('deadline_exceeded');
    expect(heir.callsTo('pt_charge')).toHaveLength(0);
  }
  expect((await recoverer.getRun(runId))?.status).toBe(expected.recovered === 'completed' ? 'completed' : 'failed');
  await recoverer.close();
}
