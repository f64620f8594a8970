// runner.decide's public types (docs/guides/watching-runs.md, "Deciding for a user"), against the built declarations.
import { describe, expectTypeOf, it } from 'vitest';
import { createRunner, functionInvoker, memoryRunStore, type DecideResult, type GateDecision, type InDoubtStep, type RetryDecision, type RunDecision, type RunInfo, type RunResult, type TraceStep } from 'chainkit';

describe('runner.decide', () => {
  const runner = createRunner({ invoker: functionInvoker([], {}), stores: { runs: memoryRunStore() } });

  it('takes { approved, by } and answers a RunResult or not_found / not_parked, narrowed by comparison', async () => {
    expectTypeOf<RunDecision>().toEqualTypeOf<GateDecision | RetryDecision>();
    const r = await runner.decide<{ sent: boolean }>('run-1', { approved: true, by: 'ops:alice' });
    expectTypeOf(r).toEqualTypeOf<DecideResult<{ sent: boolean }>>();
    expectTypeOf(r).toEqualTypeOf<RunResult<{ sent: boolean }> | 'not_found' | 'not_parked'>();
    if (r !== 'not_found' && r !== 'not_parked' && r.status === 'completed') expectTypeOf(r.output).toEqualTypeOf<{ sent: boolean }>();
    // @ts-expect-error `by` is required: a decision names who made it
    void runner.decide('run-1', { approved: true });
    // @ts-expect-error `approved` is a boolean
    void runner.decide('run-1', { approved: 'yes', by: 'ops' });
  });

  it('takes { retry, by } for a run in doubt; the in_doubt result names the step', async () => {
    expectTypeOf<RetryDecision>().toEqualTypeOf<{ retry: boolean; by: string }>();
    const r = await runner.decide('run-1', { retry: true, by: 'ops:alice' });
    expectTypeOf(r).toEqualTypeOf<DecideResult>();
    if (r !== 'not_found' && r !== 'not_parked' && r.status === 'in_doubt') {
      expectTypeOf(r.step).toEqualTypeOf<string>();
      expectTypeOf(r.inDoubt).toEqualTypeOf<InDoubtStep[]>();
      expectTypeOf(r.inDoubt[0]!.startedAt).toEqualTypeOf<number>();
    }
    expectTypeOf<RunInfo['inDoubt']>().toEqualTypeOf<InDoubtStep[] | undefined>();
    // @ts-expect-error `by` is required for a retry decision too
    void runner.decide('run-1', { retry: false });
    // @ts-expect-error `retry` is a boolean
    void runner.decide('run-1', { retry: 'yes', by: 'ops' });
  });

  it('who decided is on the trace entry and in getRun', () => {
    expectTypeOf<TraceStep['decidedBy']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<RunInfo['decidedBy']>().toEqualTypeOf<string | undefined>();
  });
});
