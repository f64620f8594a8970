// Watching runs' public types (docs/guides/watching-runs.md), against the built declarations.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker, memoryRunStore, RunWatchError, type RunEndData, type RunEvent, type RunEventType, type RunnerOptions, type RunResult, type RunStatus, type RunStream, type RunSummary, type ToolCall } from 'chainkit';
import type { RunStore } from 'chainkit/stores';
import { lastEventId, toSSE } from 'chainkit/sse';

const count = defineTool({ name: 'count', description: 'c', input: z.object({ n: z.number() }), output: z.object({ total: z.number() }), effect: 'read' });
const counting = chain('counting', { input: z.object({ n: z.number() }) }).tool('count', count, (ref) => ({ n: ref('input', 'n') })).build();

describe('watching runs', () => {
  it('getRun and watch take the trusted context a run must have been started with', () => {
    const runner = createRunner({ invoker: functionInvoker([count], { count: async ({ n }) => ({ total: n }) }), stores: { runs: memoryRunStore() } });
    interface Session { userId: string }
    const session: Session = { userId: 'alice' };
    void runner.getRun('r', { context: session });
    expectTypeOf(runner.watch('r', { context: { userId: 'alice' }, after: 3 })).toEqualTypeOf<AsyncIterable<RunEvent>>();
    // @ts-expect-error a context is an object, not a user id
    void runner.getRun('r', { context: 'alice' });
    // @ts-expect-error a context is an object, not a user id
    void runner.watch('r', { context: 'alice' });
    expectTypeOf(runner.cancel('r', { context: session })).toEqualTypeOf<Promise<'cancelled' | 'not_found' | 'ended'>>();
    // @ts-expect-error a context is an object, not a user id
    void runner.cancel('r', { context: 'alice' });
    void runner.signal('r', 'review', { ok: true }, { context: session });
    // @ts-expect-error a context is an object, not a user id
    void runner.signal('r', 'review', { ok: true }, { context: 'alice' });
    expectTypeOf(runner.listRuns({ context: session, status: 'awaiting_confirmation' })).resolves.toHaveProperty('runs');
    // @ts-expect-error a context is an object, not a user id
    void runner.listRuns({ context: 'alice' });
  });

  it('RunEvent is a union discriminated by type: data narrows with it', () => {
    expectTypeOf<RunEventType>().toEqualTypeOf<'run:start' | 'step:start' | 'step:progress' | 'step:retry' | 'step:end' | 'confirmation:requested' | 'run:end' | 'item:end' | 'signal:received'>();
    const see = (e: RunEvent): void => {
      expectTypeOf(e.seq).toEqualTypeOf<number>();
      if (e.type === 'step:progress') {
        expectTypeOf(e.step).toEqualTypeOf<string>();
        expectTypeOf(e.data).toEqualTypeOf<unknown>();
      }
      if (e.type === 'step:end') expectTypeOf(e.data.attempts).toEqualTypeOf<number>();
      if (e.type === 'run:end') {
        expectTypeOf(e.data).toEqualTypeOf<RunEndData>();
        if (e.data.status === 'failed') expectTypeOf(e.data.error.code).toEqualTypeOf<string>();
        // @ts-expect-error run:end never carries a resume token
        void e.data.resumeToken;
      }
      // @ts-expect-error `data` of a run:start has no `attempts`
      if (e.type === 'run:start') void e.data.attempts;
    };
    void see;
  });

  it("stream's result is typed from the chain; watch yields RunEvents; call.progress takes anything", () => {
    const runner = createRunner({
      invoker: functionInvoker([count], {
        count: async ({ n }, call) => {
          expectTypeOf(call.progress).toEqualTypeOf<(data: unknown) => void>();
          call.progress({ done: 1, of: n });
          return { total: n };
        },
      }),
      stores: { runs: memoryRunStore() },
    });
    const s = runner.stream(counting, { n: 2 });
    expectTypeOf(s).toEqualTypeOf<RunStream<{ total: number }>>();
    expectTypeOf(s.result).toEqualTypeOf<Promise<RunResult<{ total: number }>>>();
    expectTypeOf(s.runId).toEqualTypeOf<string>();
    expectTypeOf(s.events).toEqualTypeOf<AsyncIterable<RunEvent>>();
    expectTypeOf(runner.watch('r', { after: 3 })).toEqualTypeOf<AsyncIterable<RunEvent>>();
    // @ts-expect-error the input is checked against the chain
    runner.stream(counting, { n: 'x' });
    expectTypeOf<ToolCall['progress']>().toEqualTypeOf<(data: unknown) => void>();
    expectTypeOf<RunWatchError['code']>().toEqualTypeOf<'fell_behind' | 'not_found'>();
  });

  it('chainkit/sse takes run events and headers', () => {
    expectTypeOf(toSSE).parameter(0).toEqualTypeOf<AsyncIterable<RunEvent>>();
    expectTypeOf(toSSE).returns.toEqualTypeOf<ReadableStream<Uint8Array>>();
    expectTypeOf(lastEventId(new Headers())).toEqualTypeOf<number | undefined>();
  });

  it('retention is an option of ms per ending; retrying is a status; stores may mark retries and record cancels', () => {
    expectTypeOf<RunnerOptions['retention']>().toEqualTypeOf<{ completedMs?: number; failedMs?: number } | undefined>();
    createRunner({ invoker: functionInvoker({}), stores: { runs: memoryRunStore() }, retention: { completedMs: 3_600_000, failedMs: 86_400_000 } });
    // @ts-expect-error retention is in ms
    createRunner({ invoker: functionInvoker({}), stores: { runs: memoryRunStore() }, retention: { completedMs: '1h' } });
    expectTypeOf<'retrying'>().toExtend<RunStatus>();
    expectTypeOf<'retrying'>().toExtend<RunSummary['status']>();
    expectTypeOf<RunStore['markRetrying']>().toEqualTypeOf<((runId: string, owner: string, until: number | null) => Promise<boolean>) | undefined>();
    expectTypeOf<RunStore['requestCancel']>().toEqualTypeOf<((runId: string, reason: string | undefined) => Promise<boolean>) | undefined>();
  });
});
