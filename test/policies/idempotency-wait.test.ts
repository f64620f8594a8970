// The one wait-and-poll loop of the shared idempotency stores (Redis and PostgreSQL both use it),
// under fake timers: what each kept state answers, when it gives up, and that cancel leaves nothing.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ToolFailure } from '../../src/errors/failure.js';
import {
  stillUnknown,
  unknownClaim,
  unknownOutcomeInfo,
  waitForDuplicate,
  type KeptOutcome,
} from '../../src/stores/pending.js';

const wait = { now: () => Date.now(), waitMs: 1_000, pollMs: 50, pendingTtlMs: 60_000 };
/** A read that answers each state in turn, counting its calls. */
function reads(...states: KeptOutcome[]) {
  let n = 0;
  const read = async (): Promise<KeptOutcome> => states[Math.min(n++, states.length - 1)];
  return { read, count: () => n };
}

describe('waitForDuplicate', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads every pollMs until the call in flight keeps its result', async () => {
    const r = reads({ s: 'p' }, { s: 'p' }, { s: 'd', v: { paid: 1 } });
    const claim = waitForDuplicate('k', r.read, wait);
    let value: unknown;
    void claim.settled.then((v) => (value = v));
    await vi.advanceTimersByTimeAsync(100);
    expect([r.count(), value]).toEqual([2, undefined]);
    await vi.advanceTimersByTimeAsync(50);
    expect([r.count(), value]).toEqual([3, { paid: 1 }]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('answers an unknown outcome with that failure and how to go on; a released key and a long wait with conflict', async () => {
    const unknown = waitForDuplicate(
      'k',
      reads({
        s: 'u',
        e: { category: 'timeout', code: 'attempt_timeout', message: 'Tool pay did not answer within 50 ms.' },
      }).read,
      wait,
    );
    const failed = expect(unknown.settled).rejects.toMatchObject({
      info: { code: 'attempt_timeout', outcomeUnknown: true },
      message: expect.stringMatching(/within 50 ms\. .*up to 60 s .*another runId or idempotencyKey/),
    });
    await vi.advanceTimersByTimeAsync(50);
    await failed;

    const released = waitForDuplicate('k', reads(undefined).read, wait);
    const gone = expect(released.settled).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(/failed elsewhere/),
    });
    await vi.advanceTimersByTimeAsync(50);
    await gone;

    const r = reads({ s: 'p' });
    const held = waitForDuplicate('k', r.read, wait);
    const tooLong = expect(held.settled).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(/still in flight elsewhere after 1000 ms/),
    });
    await vi.advanceTimersByTimeAsync(1_000);
    await tooLong;
    expect(r.count()).toBe(20);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("passes the read's own failure on", async () => {
    const claim = waitForDuplicate(
      'k',
      async () => {
        throw new Error('store down');
      },
      wait,
    );
    const down = expect(claim.settled).rejects.toThrow('store down');
    await vi.advanceTimersByTimeAsync(50);
    await down;
  });

  it('cancel stops it at once: no further read, no timer, and settled stays pending', async () => {
    const r = reads({ s: 'p' });
    const claim = waitForDuplicate('k', r.read, wait);
    let settled = false;
    void claim.settled.then(
      () => (settled = true),
      () => (settled = true),
    );
    await vi.advanceTimersByTimeAsync(120);
    const before = r.count();
    claim.cancel!();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(r.count()).toBe(before);
    expect(settled).toBe(false);
  });
});

describe('the unknown outcome of a write', () => {
  it('keeps a classified failure as it is, anything else as outcome_unknown', () => {
    const info = { category: 'timeout' as const, code: 'http_504', message: 'Gateway timeout.' };
    expect(unknownOutcomeInfo(new ToolFailure(info))).toBe(info);
    expect(unknownOutcomeInfo(new Error('socket hang up'))).toEqual({
      category: 'timeout',
      code: 'outcome_unknown',
      message: 'socket hang up',
    });
  });

  it('answers at once, never as an unhandled rejection, and says the TTL in ms when it is not whole seconds', async () => {
    const claim = unknownClaim({ category: 'timeout', code: 'attempt_timeout', message: 'late.' }, 1_500);
    await new Promise((r) => setTimeout(r, 0)); // nothing attached yet: must not be unhandled
    await expect(claim.settled).rejects.toMatchObject({ message: expect.stringMatching(/up to 1500 ms after/) });
    expect(stillUnknown({ category: 'network', code: 'ECONNRESET', message: 'reset.' }, 60_000).info).toMatchObject({
      category: 'network',
      code: 'ECONNRESET',
      outcomeUnknown: true,
    });
  });
});
