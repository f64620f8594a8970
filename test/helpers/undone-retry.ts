// A write undone after a failed run, then the run retried under the same run id on another replica:
// over any shared idempotency store, the retry must reserve again (never be answered with the result
// its undo took back), and a third failure undoes that second reservation under a key of its own.
import { expect } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ref } from 'chainkit';
import type { IdempotencyStore } from 'chainkit/stores';
import { createMockInvoker } from 'chainkit/testing';
import { http } from '../helpers.js';

const reserve = defineTool({
  name: 'reserve',
  description: 'r',
  input: z.object({ item: z.string() }),
  output: z.object({ id: z.string(), at: z.date() }),
  effect: 'write',
});
const release = defineTool({
  name: 'release',
  description: 'r',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  retry: false,
});
const charge = defineTool({
  name: 'charge',
  description: 'c',
  input: z.object({ reservation: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  retry: false,
});
const reserveAndPay = defineChain({
  name: 'reserve_and_pay',
  input: z.object({ item: z.string() }),
  steps: [
    {
      id: 'reserve',
      tool: reserve,
      input: { item: ref('input', 'item') },
      compensate: { tool: release, input: { id: ref('reserve', 'id') } },
    },
    { id: 'pay', tool: charge, input: { reservation: ref('reserve', 'id') } },
  ],
});

/**
 * Runs `reserve_and_pay` under one run id on three replicas sharing `idempotency`: declined, declined,
 * then paid. Returns the keys each tool saw, in order, and the three outcomes.
 */
export async function retriedAfterUndo(idempotency: () => IdempotencyStore, runId: string) {
  let n = 0;
  const answers = [http(402, 'declined'), http(402, 'declined')];
  const invoker = () =>
    createMockInvoker({
      reserve: () => ({ id: `r${++n}`, at: new Date(0) }),
      release: { ok: { ok: true } },
      charge: () => {
        const declined = answers.shift();
        if (declined) throw declined;
        return { ok: true };
      },
    });
  const replicas = [0, 1, 2].map(() => {
    const calls = invoker();
    return { calls, runner: createRunner({ invoker: calls, stores: { idempotency: idempotency() } }) };
  });
  const outcomes: string[] = [];
  for (const { runner } of replicas)
    outcomes.push((await runner.run(reserveAndPay, { item: 'seat' }, { runId })).status);
  await Promise.all(replicas.map((r) => r.runner.close()));
  const keys = (tool: string) => replicas.flatMap((r) => r.calls.callsTo(tool).map((c) => c.idempotencyKey));
  const inputs = (tool: string) => replicas.flatMap((r) => r.calls.callsTo(tool).map((c) => c.input));
  return { outcomes, reserve: keys('reserve'), release: keys('release'), released: inputs('release') };
}

/** What {@link retriedAfterUndo} must give on every store. */
export function expectedAfterUndo(runId: string) {
  return {
    outcomes: ['failed', 'failed', 'completed'],
    reserve: [`${runId}:reserve`, `${runId}:reserve#1`, `${runId}:reserve#2`],
    release: [`${runId}:reserve:compensate`, `${runId}:reserve:compensate#1`],
    released: [{ id: 'r1' }, { id: 'r2' }],
  };
}

/**
 * What every store with `markUndone` keeps: the mark replaces a kept result and is answered as
 * `undone`; a late `fail` or `completeLate` leaves it; a key absent or claimed is not marked; with a
 * `done` claim's `at`, only the result kept then is.
 */
export async function undoneMarkContract(store: IdempotencyStore, prefix: string) {
  const kept = `${prefix}:kept`;
  expect(await store.begin(kept)).toEqual({ status: 'new' });
  await store.complete(kept, { id: 1 });
  await store.markUndone!(kept);
  expect(await store.begin(kept)).toEqual({ status: 'undone' });
  await store.fail(kept, new Error('a claim that lapsed'), false); // releases claims, never a mark
  await store.completeLate!(kept, { id: 2 }); // keeps a late answer over an unknown outcome only
  expect(await store.begin(kept)).toEqual({ status: 'undone' });

  const absent = `${prefix}:absent`;
  await store.markUndone!(absent);
  expect(await store.begin(absent)).toEqual({ status: 'new' });
  await store.markUndone!(absent); // claimed, in flight: left to its claimant
  await store.complete(absent, { id: 3 });
  expect(await store.begin(absent)).toEqual({ status: 'done', at: expect.any(Number), value: { id: 3 } });

  // With `at`, only the result kept then: one kept at another time (by a call after it lapsed) stays.
  const stamped = `${prefix}:stamped`;
  expect(await store.begin(stamped)).toEqual({ status: 'new' });
  await store.complete(stamped, undefined);
  const done = await store.begin(stamped);
  if (done.status !== 'done' || done.at === undefined) throw new Error(`not stamped: ${JSON.stringify(done)}`);
  await store.markUndone!(stamped, undefined, done.at + 1);
  expect(await store.begin(stamped)).toEqual({ status: 'done', at: done.at, value: undefined });
  await store.markUndone!(stamped, undefined, done.at);
  expect(await store.begin(stamped)).toEqual({ status: 'undone' });
  await store.markUndone!(stamped, undefined, done.at + 1); // a mark is renewed, whatever it replaced
  expect(await store.begin(stamped)).toEqual({ status: 'undone' });
}
