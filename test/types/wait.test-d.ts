// API.md §12: sleep, waitFor (its result typed by its schema), runner.signal, the `waiting` result and `signal:received`.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineChain, functionInvoker, memoryRunStore, ref, SignalRefused, type RunEvent, type RunResult, type RunWaiting, type SignalResult } from 'chainkit';

const Review = z.object({ ok: z.boolean(), note: z.string().optional() });

describe('§12 sleep and waitFor', () => {
  it('types a waitFor result by its schema and a sleep as null, in the builder', () => {
    const c = chain('reviewed', { input: z.object({ delayMs: z.number() }) })
      .sleep('cool_down', 60_000)
      .sleep('backoff', (ref) => ref('input', 'delayMs'))
      .waitFor('review', { signal: 'review', schema: Review, timeoutMs: 86_400_000 })
      .output((s) => {
        expectTypeOf(s.results.cool_down).toEqualTypeOf<null>();
        expectTypeOf(s.results.review).toEqualTypeOf<{ ok: boolean; note?: string | undefined }>();
        return s.results.review.ok;
      });
    void c;
    // @ts-expect-error a sleep of a ref to a string
    chain('bad', { input: z.object({ s: z.string() }) }).sleep('nap', (ref) => ref('input', 's'));
  });

  it('types them in the declarative form', () => {
    defineChain({
      name: 'reviewed_decl', input: z.object({ ms: z.number() }),
      steps: [
        { id: 'nap', sleep: ref('input', 'ms') },
        { id: 'review', waitFor: { signal: 'review', schema: Review } },
      ] as const,
      output: (s) => {
        expectTypeOf(s.results.nap).toEqualTypeOf<null>();
        expectTypeOf(s.results.review.ok).toEqualTypeOf<boolean>();
        return s.results.review.ok;
      },
    });
  });

  it('types runner.signal, the waiting result and signal:received', async () => {
    const runner = createRunner({ invoker: functionInvoker({}), stores: { runs: memoryRunStore() } });
    const r = await runner.signal('run-1', 'review', { ok: true });
    expectTypeOf(r).toEqualTypeOf<SignalResult<unknown>>();
    if (r !== 'not_found' && r !== 'not_waiting' && r.status === 'waiting') expectTypeOf(r.waiting).toEqualTypeOf<RunWaiting>();
    expectTypeOf<Extract<RunResult, { status: 'waiting' }>['waiting']>().toEqualTypeOf<{ step: string; until?: number; signal?: string }>();
    const see = (e: RunEvent): void => {
      if (e.type === 'signal:received') expectTypeOf(e.data).toEqualTypeOf<{ signal: string }>();
      if (e.type === 'run:end' && e.data.status === 'waiting') expectTypeOf(e.data.waiting.step).toEqualTypeOf<string>();
    };
    void see;
    expectTypeOf(new SignalRefused('m', []).code).toEqualTypeOf<'invalid_signal'>();
  });
});
