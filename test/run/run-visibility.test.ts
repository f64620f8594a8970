// `getRun` and `watch` with `{ context }`: a request is shown the runs started with its own trusted
// context (its user's) and no other, and cannot tell another user's run from an unknown one.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { encodeRunValue } from '../../src/stores/run-codec.js';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, memoryRunStore, ref, type RunEvent } from 'chainkit';

const find = defineTool({
  name: 'find',
  description: 'f',
  input: z.object({ n: z.number(), user: z.string() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const owned = defineChain({
  name: 'owned',
  input: z.object({ n: z.number() }),
  context: z.object({ userId: z.string() }),
  steps: [{ id: 'find', tool: find, input: { n: ref('input', 'n'), user: ref('context', 'userId') } }],
});

const collect = async (events: AsyncIterable<RunEvent>): Promise<RunEvent[]> => {
  const seen: RunEvent[] = [];
  for await (const e of events) seen.push(e);
  return seen;
};

/** A runner on a memory run store whose `find` answers only once `release()` is called. */
const heldRunner = () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const runner = createRunner({
    invoker: functionInvoker([find], { find: async ({ n }) => (await held, { n }) }),
    stores: { runs: memoryRunStore() },
  });
  return { runner, release };
};

afterEach(() => {
  vi.useRealTimers();
});

describe('runs shown to the context they were started with', () => {
  const setup = async () => {
    const runs = memoryRunStore();
    const runner = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs },
    });
    const done = await runner.run(owned, { n: 1 }, { context: { userId: 'alice' } });
    expect(done.status).toBe('completed');
    return { runner, runs, runId: done.runId };
  };

  it('getRun: the run for its own context (as the chain’s schema gives it), undefined for another', async () => {
    const { runner, runId } = await setup();
    expect(await runner.getRun(runId, { context: { userId: 'alice' } })).toMatchObject({ runId, status: 'completed' });
    // The schema drops what it does not declare, as it did when the run started.
    expect(await runner.getRun(runId, { context: { userId: 'alice', session: 's-1' } })).toMatchObject({ runId });
    expect(await runner.getRun(runId, { context: { userId: 'bob' } })).toBeUndefined();
    expect(await runner.getRun(runId, { context: {} })).toBeUndefined(); // refused by the schema: no one's
    expect(await runner.getRun(runId)).toMatchObject({ runId }); // without a context: an operator's view
    await runner.close();
  });

  it('watch: its own user reads the events; another user fails not_found as for an unknown run, at the same time, reading none', async () => {
    const { runner, runs, runId } = await setup();
    const mine = await collect(runner.watch(runId, { context: { userId: 'alice' } }));
    expect(mine.at(-1)).toMatchObject({ type: 'run:end', data: { status: 'completed' } });

    const log = runs.events!;
    const read = log.read.bind(log);
    const reads: string[] = [];
    log.read = (id, after, limit) => (reads.push(id), read(id, after, limit));
    vi.useFakeTimers();
    const start = Date.now();
    const failedAt = (events: AsyncIterable<RunEvent>) =>
      collect(events).then(
        () => ({ error: undefined as unknown, at: Date.now() - start }),
        (error: unknown) => ({ error, at: Date.now() - start }),
      );
    const other = failedAt(runner.watch(runId, { context: { userId: 'bob' } }));
    const unknown = failedAt(runner.watch('no-such-run', { context: { userId: 'bob' } }));
    await vi.advanceTimersByTimeAsync(10_000);
    const [a, b] = await Promise.all([other, unknown]);
    expect(a.error).toMatchObject({ name: 'RunWatchError', code: 'not_found', runId });
    expect(b.error).toMatchObject({ name: 'RunWatchError', code: 'not_found', runId: 'no-such-run' });
    expect(a.at).toBe(b.at);
    expect(reads).toEqual([]);
    vi.useRealTimers();
    await runner.close();
  });

  it("stream with another user's run id hands back its own refusal only, never that run's events", async () => {
    const { runner, runId } = await setup();
    const bob = runner.stream(owned, { n: 9 }, { runId, context: { userId: 'bob' } });
    const events = await collect(bob.events);
    expect(events).toEqual([
      expect.objectContaining({ seq: 1, type: 'run:end', data: expect.objectContaining({ status: 'failed' }) }),
    ]);
    const refused = await bob.result;
    expect(refused.status === 'failed' && refused.error.code).toBe('run_id_taken');
    // Its own user asking again (a retried request) gets the recorded run, events and all.
    const again = runner.stream(owned, { n: 1 }, { runId, context: { userId: 'alice' } });
    expect((await collect(again.events)).map((e) => e.type)).toContain('step:end');
    expect((await again.result).status).toBe('completed');
    await runner.close();
  });

  it('refuses a context given but not an object (a signed-out session must not become the operator view)', async () => {
    const { runner, runId } = await setup();
    const session: { context?: { userId: string } } = {};
    await expect(runner.getRun(runId, { context: session.context })).rejects.toThrow(/leave it out/);
    await expect(collect(runner.watch(runId, { context: session.context }))).rejects.toThrow(/leave it out/);
    await runner.close();
  });

  it('an empty context, or one that throws when read, is nobody: no run is shown to it, and nothing throws', async () => {
    const runs = memoryRunStore();
    const runner = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs },
    });
    const open = defineChain({
      name: 'open_job',
      input: z.object({ n: z.number() }),
      steps: [{ id: 'find', tool: find, input: { n: ref('input', 'n'), user: 'nightly' } }],
    });
    const job = await runner.run(open, { n: 1 }); // a job started with no context
    expect(await runner.getRun(job.runId, { context: { userId: undefined } })).toBeUndefined();
    expect(await runner.getRun(job.runId, { context: {} })).toBeUndefined();
    const { runId } = await runner.run(owned, { n: 1 }, { context: { userId: 'alice' } });
    const hostile = {
      get userId(): string {
        throw new Error('session expired at db-7.internal');
      },
    };
    expect(await runner.getRun(runId, { context: hostile })).toBeUndefined();
    await runner.close();
  });

  it("cancel with a context leaves another user's run running ('not_found'), and cancels its own", async () => {
    const runs = memoryRunStore();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const runner = createRunner({
      invoker: functionInvoker([find], {
        find: async ({ n }, call) => {
          await Promise.race([held, new Promise((r) => call.signal.addEventListener('abort', r))]);
          return { n };
        },
      }),
      stores: { runs },
    });
    const running = runner.run(owned, { n: 1 }, { runId: 'long-run', context: { userId: 'alice' } });
    await new Promise((r) => setTimeout(r, 30));
    expect(await runner.cancel('long-run', { context: { userId: 'bob' } })).toBe('not_found');
    expect(await runner.cancel('no-such-run', { context: { userId: 'bob' } })).toBe('not_found');
    expect((await runner.getRun('long-run'))!.status).toBe('running');
    expect(await runner.cancel('long-run', { context: { userId: 'alice' }, reason: 'closed the page' })).toBe(
      'cancelled',
    );
    const r = await running;
    expect(r.status === 'failed' && r.error.code).toBe('run_cancelled');
    release();
    await runner.close();
  });

  it('stream of its own run in flight elsewhere (busy) follows that run to its real end, making up nothing', async () => {
    const { runner, release } = heldRunner();
    const first = runner.stream(owned, { n: 1 }, { context: { userId: 'alice' } });
    const firstEvents = first.events[Symbol.asyncIterator]();
    await firstEvents.next(); // under way
    const second = runner.stream(owned, { n: 1 }, { runId: first.runId, context: { userId: 'alice' } });
    const seen = collect(second.events);
    const refused = await second.result;
    expect(refused.status === 'failed' && refused.error.code).toBe('run_in_progress');
    release();
    expect((await first.result).status).toBe('completed');
    const real = await collect(runner.watch(first.runId));
    const got = await seen;
    expect(got.map((e) => [e.seq, e.type])).toEqual(real.map((e) => [e.seq, e.type]));
    expect(got.at(-1)).toMatchObject({ type: 'run:end', data: { status: 'completed' } });
    await firstEvents.return?.();
    await runner.close();
  });

  it('a run recorded before runs kept their context hash is nobody’s: run and stream with its id are refused', async () => {
    const { runner, runs, runId } = await setup();
    const stored = (await runs.get(runId))!;
    // The same run as a record written before contextHash existed, with its events.
    const legacy = memoryRunStore();
    await legacy.create(
      { ...stored, contextHash: undefined, status: 'running', owner: 'x', leaseUntil: 0 },
      Date.now(),
    );
    await legacy.finish(runId, 'x', 'completed', stored.result, 60_000);
    const events = await runs.events!.read(runId, 0, 100);
    await legacy.events!.append(
      runId,
      events.map((e) => encodeRunValue({ at: e.at, type: e.type, ...(e.step && { step: e.step }), data: e.data })),
    );
    const other = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs: legacy },
    });
    const bob = other.stream(owned, { n: 1 }, { runId, context: { userId: 'bob' } });
    const seen = await collect(bob.events);
    expect(seen.map((e) => e.type)).toEqual(['run:end']);
    const refused = await bob.result;
    expect(refused.status === 'failed' && refused.error.code).toBe('run_id_taken'); // before: alice's output
    await other.close();
    await runner.close();
  });

  it('a runner that does not know the chain compares the context as given (a field more is another context)', async () => {
    const { runner, runs, runId } = await setup();
    const elsewhere = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs },
    });
    expect(await elsewhere.getRun(runId, { context: { userId: 'alice' } })).toMatchObject({ runId });
    expect(await elsewhere.getRun(runId, { context: { userId: 'alice', session: 's-1' } })).toBeUndefined();
    await elsewhere.close();
    await runner.close();
  });

  it('watch with a context follows a run recorded a moment after the watch began', async () => {
    const { runner, release } = heldRunner();
    const runId = 'run-soon';
    const began = Date.now();
    const watching = collect(runner.watch(runId, { context: { userId: 'carol' } }));
    await new Promise((r) => setTimeout(r, 50));
    const done = runner.run(owned, { n: 2 }, { runId, context: { userId: 'carol' } });
    release();
    expect((await done).status).toBe('completed');
    const events = await watching;
    expect(Date.now() - began).toBeLessThan(800); // looked for again soon, not a second later
    expect(events.map((e) => e.type)).toContain('run:start');
    expect(events.at(-1)).toMatchObject({ type: 'run:end' });
    await runner.close();
  });

  it('signal: its own user continues the run; another user gets not_found, the payload unchecked, the run still waiting', async () => {
    const reviewed = defineChain({
      name: 'reviewed_by_owner',
      input: z.object({ n: z.number() }),
      context: z.object({ userId: z.string() }),
      steps: [
        { id: 'find', tool: find, input: { n: ref('input', 'n'), user: ref('context', 'userId') } },
        { id: 'review', waitFor: { signal: 'review', schema: z.object({ ok: z.boolean() }), timeoutMs: 60_000 } },
      ] as const,
      output: (s) => s.results.review.ok,
    });
    const runner = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs: memoryRunStore() },
    });
    const parked = await runner.run(reviewed, { n: 1 }, { context: { userId: 'alice' } });
    expect(parked.status).toBe('waiting');
    const { runId } = parked;
    // A payload its schema refuses: another user is not told the run exists, let alone what it waits for.
    expect(await runner.signal(runId, 'review', { ok: 'yes' }, { context: { userId: 'bob' } })).toBe('not_found');
    expect(await runner.signal(runId, 'review', { ok: true }, { context: { userId: 'bob' } })).toBe('not_found');
    expect(await runner.signal(runId, 'review', { ok: true }, { context: {} })).toBe('not_found');
    expect(await runner.getRun(runId)).toMatchObject({ status: 'waiting' });
    await expect(runner.signal(runId, 'review', { ok: true }, { context: undefined })).rejects.toBeInstanceOf(
      TypeError,
    );
    const done = await runner.signal(runId, 'review', { ok: true }, { context: { userId: 'alice' } });
    expect(done !== 'not_found' && done !== 'not_waiting' && done.status === 'completed' && done.output).toBe(true);
    await runner.close();
  });
});

describe('listRuns({ context }): the runs started with one user’s context', () => {
  const gate = defineChain({
    name: 'owned_gate',
    input: z.object({ n: z.number() }),
    context: z.object({ userId: z.string() }),
    steps: [
      {
        id: 'find',
        tool: find,
        input: { n: ref('input', 'n'), user: ref('context', 'userId') },
        confirm: { prompt: 'Go?' },
      },
    ],
  });
  const setup = async () => {
    const runs = memoryRunStore();
    const runner = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs },
      chains: [owned, gate],
      secret: 'a-secret-of-at-least-32-characters!!',
    });
    const as = (userId: string) => ({ context: { userId } });
    const a1 = await runner.run(owned, { n: 1 }, as('alice'));
    const b1 = await runner.run(owned, { n: 2 }, as('bob'));
    const a2 = await runner.run(gate, { n: 3 }, as('alice'));
    const b2 = await runner.run(gate, { n: 4 }, as('bob'));
    const job = await runner.run(
      defineChain({
        name: 'job',
        input: z.object({ n: z.number() }),
        steps: [{ id: 'find', tool: find, input: { n: ref('input', 'n'), user: 'nightly' } }],
      }),
      { n: 5 },
    );
    return { runner, runs, ids: { a1: a1.runId, a2: a2.runId, b1: b1.runId, b2: b2.runId, job: job.runId } };
  };
  const listed = (page: { runs: { runId: string }[] }) => page.runs.map((r) => r.runId).sort();

  it('lists only that user’s runs, with the other filters: the user’s own approvals inbox', async () => {
    const { runner, ids } = await setup();
    expect(listed(await runner.listRuns({ context: { userId: 'alice' } }))).toEqual([ids.a1, ids.a2].sort());
    expect(listed(await runner.listRuns({ context: { userId: 'bob' } }))).toEqual([ids.b1, ids.b2].sort());
    const inbox = await runner.listRuns({ context: { userId: 'alice' }, status: 'awaiting_confirmation' });
    expect(inbox.runs).toEqual([
      expect.objectContaining({ runId: ids.a2, awaiting: { step: 'find', question: 'Go?' } }),
    ]);
    expect(listed(await runner.listRuns({ context: { userId: 'alice' }, chain: 'owned' }))).toEqual([ids.a1]);
    // As each chain's context schema gives it: a field it does not declare is dropped, as when the run started.
    expect(listed(await runner.listRuns({ context: { userId: 'alice', session: 's-1' } }))).toEqual(
      [ids.a1, ids.a2].sort(),
    );
    const first = await runner.listRuns({ context: { userId: 'alice' }, limit: 1 });
    const second = await runner.listRuns({ context: { userId: 'alice' }, limit: 1, cursor: first.cursor! });
    expect([...listed(first), ...listed(second)].sort()).toEqual([ids.a1, ids.a2].sort());
    expect(second.cursor).toBeUndefined();
    // Without a context: an operator's view of every run, jobs included.
    expect((await runner.listRuns()).runs).toHaveLength(5);
    await runner.close();
  });

  it('compares each run as its own chain’s context schema gives the context, as getRun does', async () => {
    // Team reports: the context is the team (a member's userId is dropped). Notes: a user's own, or the team job's.
    const report = defineChain({
      name: 'report',
      input: z.object({ n: z.number() }),
      context: z.object({ teamId: z.string() }),
      steps: [{ id: 'find', tool: find, input: { n: ref('input', 'n'), user: 'team' } }],
    });
    const note = defineChain({
      name: 'note',
      input: z.object({ n: z.number() }),
      context: z.object({ teamId: z.string(), userId: z.string().optional() }),
      steps: [{ id: 'find', tool: find, input: { n: ref('input', 'n'), user: 'team' } }],
    });
    const runner = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs: memoryRunStore() },
      chains: [report, note],
    });
    const alice = { teamId: 't1', userId: 'alice' };
    const teamNote = await runner.run(note, { n: 1 }, { context: { teamId: 't1' } });
    const teamReport = await runner.run(report, { n: 2 }, { context: alice });
    const aliceNote = await runner.run(note, { n: 3 }, { context: alice });
    expect(await runner.getRun(teamNote.runId, { context: alice })).toBeUndefined();
    expect(listed(await runner.listRuns({ context: alice }))).toEqual([teamReport.runId, aliceNote.runId].sort());
    await runner.close();
  });

  it('an empty context, one that throws when read, or one nobody started a run with, lists nothing', async () => {
    const { runner } = await setup();
    const hostile = {
      get userId(): string {
        throw new Error('session expired at db-7.internal');
      },
    };
    for (const context of [{}, { userId: undefined }, hostile, { userId: 'carol' }])
      expect((await runner.listRuns({ context })).runs).toEqual([]);
    await runner.close();
  });

  it('refuses a context given but not an object, and a run store that cannot list by context', async () => {
    const { runner, runs } = await setup();
    const session: { context?: { userId: string } } = {};
    await expect(runner.listRuns({ context: session.context })).rejects.toThrow(/leave it out/);
    const { listsByContext: _, ...older } = runs; // a custom store written before listing by context
    const plain = createRunner({
      invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
      stores: { runs: older },
    });
    await expect(plain.listRuns({ context: { userId: 'alice' } })).rejects.toThrow(/lists runs by context/);
    expect((await plain.listRuns()).runs).toHaveLength(5);
    await plain.close();
    await runner.close();
  });
});
