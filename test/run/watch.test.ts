// Watching runs in one process, on the memory run store: run events with their seq through the
// recorder, `watch` with `after`, `stream` with its typed result, `call.progress`, a slow reader cut
// off. The same across processes on Redis and PostgreSQL: test/durable/watch.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  memoryRunStore,
  ref,
  RunWatchError,
  type RunEvent,
  type Runner,
} from '../../src/index.js';

const fetchAll = defineTool({
  name: 'fetch_all',
  description: 'f',
  input: z.object({ n: z.number() }),
  output: z.object({ items: z.array(z.number()) }),
  effect: 'read',
});
const issue = defineTool({
  name: 'issue',
  description: 'i',
  input: z.object({ items: z.array(z.number()) }),
  output: z.object({ issued: z.number() }),
  effect: 'write',
});
const chain = defineChain({
  name: 'refunds',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'find', tool: fetchAll, input: { n: ref('input', 'n') } },
    { id: 'refund', tool: issue, input: { items: ref('find', 'items') } },
  ],
});
const gated = defineChain({
  name: 'refunds_gated',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'find', tool: fetchAll, input: { n: ref('input', 'n') } },
    { id: 'refund', tool: issue, input: { items: ref('find', 'items') }, confirm: { prompt: 'Issue the refunds?' } },
  ],
});

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});

function make(options: { maxEventsPerRun?: number; progress?: number; failFirst?: boolean } = {}) {
  const runs = memoryRunStore({
    ...(options.maxEventsPerRun !== undefined && { maxEventsPerRun: options.maxEventsPerRun }),
  });
  let failed = false;
  const invoker = functionInvoker([fetchAll, issue], {
    fetch_all: async ({ n }, call) => {
      if (options.failFirst && !failed) {
        failed = true;
        throw Object.assign(new Error('busy'), { status: 503 });
      }
      call.progress({ phase: 'listing', apiKey: 'sk-secret' });
      return { items: Array.from({ length: n }, (_, i) => i) };
    },
    issue: async ({ items }, call) => {
      for (let i = 0; i < (options.progress ?? items.length); i++) call.progress({ done: i + 1, of: items.length });
      return { issued: items.length };
    },
  });
  const runner = createRunner({
    invoker,
    tools: [fetchAll, issue],
    chains: [chain, gated],
    stores: { runs },
    retry: { unavailable: { retries: 1, minDelayMs: 1, maxDelayMs: 1 } },
  });
  runners.push(runner);
  return { runner, runs };
}

const collect = async (events: AsyncIterable<RunEvent>): Promise<RunEvent[]> => {
  const out: RunEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
};

describe('watching runs (memory run store)', () => {
  it('stream: the run id, every event numbered from 1 in order ending with run:end, and the typed result', async () => {
    const { runner } = make();
    const { runId, events, result } = runner.stream(chain, { n: 3 }, { runId: 'w1' });
    expect(runId).toBe('w1');
    const seen = await collect(events);
    const r = await result;
    expect(r.status).toBe('completed');
    if (r.status === 'completed') expect(r.output.issued).toBe(3);
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.map((e) => [e.type, e.step])).toEqual([
      ['run:start', undefined],
      ['step:start', 'find'],
      ['step:progress', 'find'],
      ['step:end', 'find'],
      ['step:start', 'refund'],
      ['step:progress', 'refund'],
      ['step:progress', 'refund'],
      ['step:progress', 'refund'],
      ['step:end', 'refund'],
      ['run:end', undefined],
    ]);
    expect(seen.every((e) => e.runId === 'w1' && typeof e.at === 'number')).toBe(true);
    expect(seen[2]!.data).toEqual({ phase: 'listing', apiKey: '[REDACTED]' }); // redacted as traces are
    expect(seen[7]!.data).toEqual({ done: 3, of: 3 });
    expect(seen[3]).toMatchObject({ type: 'step:end', data: { tool: 'fetch_all', status: 'success', attempts: 1 } });
    expect(seen.at(-1)).toMatchObject({ type: 'run:end', data: { status: 'completed', output: { issued: 3 } } });
  });

  it('watch after n delivers every later event once, in order; again from 0 after the end, the same events', async () => {
    const { runner } = make();
    await runner.run(chain, { n: 2 }, { runId: 'w2' });
    const all = await collect(runner.watch('w2'));
    expect(all.at(-1)!.type).toBe('run:end');
    for (const n of [0, 1, 4, all.length - 1]) {
      const rest = await collect(runner.watch('w2', { after: n }));
      expect(rest.map((e) => e.seq)).toEqual(all.slice(n).map((e) => e.seq));
      expect(rest).toEqual(all.slice(n));
    }
    // After run:end itself (a reconnect that had read everything): it ends at once, with no made-up second end.
    const started = Date.now();
    expect(await collect(runner.watch('w2', { after: all.length }))).toEqual([]);
    expect(Date.now() - started).toBeLessThan(5_000); // not after the ~20 s an ended run with no events is given
  });

  it('a watch that started before the run sees it live; a retry shows as step:retry', async () => {
    const { runner } = make({ failFirst: true });
    const watching = collect(runner.watch('w3'));
    await new Promise((r) => setTimeout(r, 5));
    await runner.run(chain, { n: 1 }, { runId: 'w3' }).catch(() => undefined);
    // The watch began before anything was recorded: it waits (the run is not known yet) and then follows it.
    const seen = await watching.catch((e: unknown) => e);
    if (seen instanceof RunWatchError) throw seen;
    const retry = (seen as RunEvent[]).find((e) => e.type === 'step:retry');
    expect(retry).toMatchObject({ step: 'find', data: { tool: 'fetch_all', attempt: 1, category: 'unavailable' } });
  });

  it('a run parked at a gate: confirmation:requested, then run:end awaiting_confirmation; after resume the watch goes on from its seq', async () => {
    const { runner } = make();
    const r = await runner.run(gated, { n: 1 }, { runId: 'w4' });
    expect(r.status).toBe('awaiting_confirmation');
    const first = await collect(runner.watch('w4'));
    expect(first.slice(-2).map((e) => e.type)).toEqual(['confirmation:requested', 'run:end']);
    expect(first.at(-1)!.data).toEqual({
      status: 'awaiting_confirmation',
      confirmation: { step: 'refund', tool: 'issue', prompt: 'Issue the refunds?', expiresAt: expect.any(String) },
    });
    expect(JSON.stringify(first)).not.toContain(r.status === 'awaiting_confirmation' ? r.resumeToken : 'x'); // never the token
    const last = first.at(-1)!.seq;
    const resumed = await runner.resume(r.status === 'awaiting_confirmation' ? r.resumeToken : '', { approved: true });
    expect(resumed.status).toBe('completed');
    const rest = await collect(runner.watch('w4', { after: last }));
    expect(rest[0]).toMatchObject({
      seq: last + 1,
      type: 'run:start',
      data: { chain: 'refunds_gated', resumed: true },
    });
    expect(rest.at(-1)).toMatchObject({ type: 'run:end', data: { status: 'completed' } });
  });

  it('cuts off a reader that fell behind what the log keeps, with the seq to resume from; memory stays bounded', async () => {
    const { runner } = make({ maxEventsPerRun: 100, progress: 5_000 });
    const { events, result } = runner.stream(chain, { n: 1 });
    const it = events[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ seq: 1, type: 'run:start' });
    await result; // 5 000 progress events while the reader reads nothing
    // What the watch had read before (one page at most) it still delivers; then it is cut off.
    let delivered = 1;
    let error: unknown;
    for (;;) {
      const step = await it.next().catch((e: unknown) => {
        error = e;
        return undefined;
      });
      if (!step || step.done) break;
      delivered = step.value.seq;
      expect(step.value.type).not.toBe('run:end');
    }
    expect(error).toBeInstanceOf(RunWatchError);
    expect(error).toMatchObject({ code: 'fell_behind', lastSeq: delivered });
    expect(delivered).toBeLessThan(300);
    expect((error as Error).message).toMatch(/fell behind.*after: \d+/);
    // Resuming from what the log still keeps reaches the end.
    const from = Number(/after: (\d+)/.exec((error as Error).message)![1]);
    const rest = await collect(runner.watch((await result).runId, { after: from }));
    expect(rest.length).toBeLessThanOrEqual(100);
    expect(rest.at(-1)!.type).toBe('run:end');
  });

  it('stream of an input the chain refuses ends with a run:end made from the result', async () => {
    const { runner } = make();
    const { events, result } = runner.stream(chain, { n: 'x' } as never);
    const seen = await collect(events);
    expect((await result).status).toBe('failed');
    expect(seen).toEqual([
      expect.objectContaining({ seq: 1, type: 'run:end', data: expect.objectContaining({ status: 'failed' }) }),
    ]);
  });

  it('watch of a run the store does not know fails not_found; watch and stream need a run store', async () => {
    const { runner } = make();
    const error = await collect(runner.watch('nope')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'RunWatchError', code: 'not_found', runId: 'nope' });
    const bare = createRunner({ invoker: async () => ({}) });
    runners.push(bare);
    expect(() => bare.watch('x')).toThrow(/stores: \{ runs \}/);
    expect(() => bare.stream(chain, { n: 1 })).toThrow(/memoryRunStore/);
  });

  it('a run id that is no run id fails the watch when it is read, not when it is asked for (an SSE handler reports it)', async () => {
    const { runner } = make();
    for (const bad of ['\u0001', 'a'.repeat(256), '\u2028']) {
      const events = runner.watch(bad); // does not throw here: the handler has already answered its headers
      const error = await collect(events).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ info: { category: 'invalid_input', code: 'invalid_run_id' } });
    }
  });

  it('stream with a run id shaped like an internal announce is refused without touching another run', async () => {
    const { runner } = make({ progress: 1 });
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const victim = runner.stream(gated, { n: 1 });
    const hostile = runner.stream(chain, { n: 1 }, { runId: `\u0001cancel:5:pwned${victim.runId}` });
    expect(hostile.runId).toContain('pwned');
    expect((await hostile.result).status === 'failed' && (await hostile.result)).toMatchObject({
      error: { code: 'invalid_run_id' },
    });
    // Its events: one run:end made from its result, as for an input the chain refuses.
    expect((await collect(hostile.events)).map((e) => [e.type, e.type === 'run:end' && e.data.status])).toEqual([
      ['run:end', 'failed'],
    ]);
    release();
    await slow;
    // Still parked at its gate, not cancelled by the hostile id.
    expect((await victim.result).status).toBe('awaiting_confirmation');
  });

  it('a signal ends the watch quietly', async () => {
    const { runner } = make();
    const stop = new AbortController();
    const iter = runner.watch('never-started', { signal: stop.signal })[Symbol.asyncIterator]();
    const next = iter.next();
    setTimeout(() => stop.abort(), 20);
    expect(await next).toEqual({ done: true, value: undefined });
  });

  it('without a run store call.progress is a no-op', async () => {
    const invoker = functionInvoker([fetchAll, issue], {
      fetch_all: async (_i, call) => {
        call.progress({ step: 1 });
        const { progress } = { ...call };
        progress('spread');
        return { items: [1] };
      },
      issue: async () => ({ issued: 1 }),
    });
    const runner = createRunner({ invoker });
    runners.push(runner);
    expect((await runner.run(chain, { n: 1 })).status).toBe('completed');
  });
});
