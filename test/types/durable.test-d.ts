// Durable runs' public types (docs/guides/durable-runs.md), against the built declarations.
import { describe, expectTypeOf, it } from 'vitest';
import { createRunner, functionInvoker, type RunInfo, type RunnerOptions, type RunResult, type RunEndEvent, type RunRecoveredEvent } from 'chainkit';
import { type IdempotencyClaim, type IdempotencyStore, type LastEvents, type RunStore } from 'chainkit/stores';
import { postgresStores, type PostgresStores } from 'chainkit/postgres';
import { redisStores } from 'chainkit/redis';
import { memoryRunStore } from 'chainkit/testing';

describe('durable runs', () => {
  it('types the run store, recover, getRun and their events', () => {
    const runner = createRunner({ invoker: functionInvoker({}), stores: { runs: memoryRunStore() }, leaseMs: 10_000, recover: { intervalMs: 5_000 } });
    expectTypeOf(runner.recover()).toEqualTypeOf<Promise<RunResult[]>>();
    expectTypeOf(runner.getRun('r')).toEqualTypeOf<Promise<RunInfo | undefined>>();
    expectTypeOf<RunInfo['status']>().toEqualTypeOf<'running' | 'awaiting_confirmation' | 'completed' | 'failed' | 'declined' | 'retrying' | 'in_doubt' | 'waiting'>();
    runner.events.on('run:recovered', (e) => expectTypeOf(e).toEqualTypeOf<RunRecoveredEvent>());
    runner.events.on('run:end', (e) => expectTypeOf(e.result).toEqualTypeOf<RunResult>());
    expectTypeOf<RunEndEvent['recovered']>().toEqualTypeOf<boolean>();
  });

  it('takes the Redis and Postgres stores as they come', () => {
    expectTypeOf(redisStores).returns.toHaveProperty('runs').toExtend<RunStore>();
    expectTypeOf<PostgresStores['runs']>().toExtend<RunStore>();
    expectTypeOf(postgresStores).parameter(1).toExtend<{ schema?: string } | undefined>();
    // @ts-expect-error recover needs its interval
    const bad: RunnerOptions = { invoker: functionInvoker({}), recover: {} };
    void bad;
  });

  it('an idempotency store may mark an undone write; begin then answers undone', () => {
    expectTypeOf<Extract<IdempotencyClaim, { status: 'undone' }>>().toEqualTypeOf<{ status: 'undone' }>();
    expectTypeOf<NonNullable<IdempotencyStore['markUndone']>>().parameters.toEqualTypeOf<[key: string, ttlMs?: number, at?: number]>();
    expectTypeOf<Extract<IdempotencyClaim, { status: 'done' }>>().toEqualTypeOf<{ status: 'done'; value: unknown; at?: number }>();
    // A custom store written before it still fits: the member is optional.
    const older: IdempotencyStore = { begin: () => ({ status: 'new' }), complete: () => undefined, fail: () => undefined };
    void older;
    expectTypeOf(redisStores).returns.toHaveProperty('idempotency').toExtend<IdempotencyStore>();
  });

  it('a run store may end a run and append its last events in one write', () => {
    type FinishWithEvents = NonNullable<RunStore['finishWithEvents']>;
    expectTypeOf<Parameters<FinishWithEvents>[6]>().toEqualTypeOf<LastEvents>();
    expectTypeOf<ReturnType<FinishWithEvents>>().toEqualTypeOf<Promise<boolean>>();
    expectTypeOf<LastEvents>().toEqualTypeOf<{ events: readonly string[]; keepMs: number; watched: boolean }>();
    // @ts-expect-error the events are encoded strings
    const bad: LastEvents = { events: [{ type: 'run:end' }], keepMs: 1, watched: false };
    void bad;
  });
});
