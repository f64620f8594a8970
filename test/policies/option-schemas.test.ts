import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, isDefinitionError } from 'chainkit';
import { callStore } from '../../src/stores/guard.js';

/** Every problem a call reports, as `path: message`. */
const problems = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (error) {
    if (isDefinitionError(error)) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  return [];
};
const invoker = async (): Promise<unknown> => ({});

// Runner options and tool policy options are zod schemas whose leaves carry chainkit's own messages.
describe('option schemas', () => {
  it('state each bad runner option once, with its path and the message it always had', () => {
    expect(
      problems(() =>
        createRunner({
          invoker: 42,
          confirmationTtlMs: 0,
          traceDetail: 'verbose',
          now: 'soon',
          breaker: { threshold: 1.5, openMs: 2 ** 31 },
          retry: { internal: { retries: -1, factor: 0.5 }, timeout: 3, nonsense: {} },
          secret: 'short',
        } as never),
      ),
    ).toEqual([
      'invoker: Expected `invoker` to be a function (call: ToolCall) => Promise<unknown>, e.g. functionInvoker({...}).',
      'confirmationTtlMs: Expected `confirmationTtlMs` to be a positive number of ms below 2^31.',
      "traceDetail: Expected `traceDetail` to be 'summary' or 'full'.",
      'now: Expected `now` to be a function.',
      'breaker.threshold: Expected `threshold` to be a positive integer.',
      'breaker.openMs: Expected `openMs` to be a positive number of ms below 2^31.',
      'retry.timeout: Expected `retry` to be an object or false.', // categories in the order of ERROR_CATEGORIES, unknown ones last
      'retry.internal.retries: Expected `retries` to be a non-negative integer.',
      'retry.internal.factor: Expected `factor` to be a finite number ≥ 1.',
      "retry.nonsense: Unknown error category 'nonsense'.",
      'secret: Expected `secret` to be a string of at least 16 characters.',
    ]);
  });

  it('take null as "the default" where an option has one, and false as "no retries" for a category', () => {
    expect(
      problems(() =>
        createRunner({
          invoker,
          confirmationTtlMs: null,
          breaker: { threshold: null, openMs: null },
          retry: { internal: false },
        } as never),
      ),
    ).toEqual([]);
  });

  it('refuse a breaker or retry table that is not an object, instead of ignoring it', () => {
    expect(problems(() => createRunner({ invoker, breaker: 5 } as never))).toEqual([
      'breaker: Expected `breaker` to be an object { threshold?, openMs? }.',
    ]);
    expect(problems(() => createRunner({ invoker, retry: [] } as never))).toEqual([
      'retry: Expected `retry` to be a table { [category]: { retries, minDelayMs, factor, maxDelayMs } }.',
    ]);
    expect(problems(() => createRunner({ invoker, retry: { internal: [] } } as never))).toEqual([
      'retry.internal: Expected `retry` to be an object or false.',
    ]);
  });

  const tool = (extra: Record<string, unknown>) => () =>
    defineTool({ name: 't', description: 'T', input: z.object({}), output: z.object({}), ...extra });

  it('state a tool rate limit and retry override the same way, once per field', () => {
    expect(
      problems(
        tool({
          rateLimit: { limit: 1.5, intervalMs: NaN, per: 'global', maxConcurrent: 0, maxQueue: -1 },
          retry: { minDelayMs: -1, maxDelayMs: Infinity },
        }),
      ),
    ).toEqual([
      'retry.minDelayMs: Expected `minDelayMs` to be a non-negative number of ms below 2^31.',
      'retry.maxDelayMs: Expected `maxDelayMs` to be a non-negative number of ms below 2^31.',
      'rateLimit.limit: Expected `limit` to be a positive integer.',
      'rateLimit.intervalMs: Expected `intervalMs` to be a positive number of ms below 2^31.',
      'rateLimit.maxConcurrent: Expected `maxConcurrent` to be a positive integer.',
      'rateLimit.maxQueue: Expected `maxQueue` to be a non-negative integer.',
    ]);
    expect(problems(tool({ rateLimit: [] }))).toEqual([
      'rateLimit: Expected `rateLimit` to be an object { limit, intervalMs, per }.',
    ]);
    expect(problems(tool({ retry: [] }))).toEqual(['retry: Expected `retry` to be an object or false.']);
  });
});

describe('store calls bounded by the deadline', () => {
  it('a store answering at once is not refused because the call was made at its deadline', async () => {
    const now = Date.now();
    await expect(
      callStore(
        () => Promise.resolve('claimed'),
        now,
        () => now,
        'idempotency',
      ),
    ).resolves.toBe('claimed');
  });

  it('a store that stays silent past the deadline fails as store_unavailable, and its failure names the store', async () => {
    const silent = callStore(() => new Promise<never>(() => {}), Date.now() + 5, Date.now, 'checkpoint');
    await expect(silent).rejects.toMatchObject({
      info: {
        category: 'unavailable',
        code: 'store_unavailable',
        message: 'The checkpoint store is unavailable: no answer before the deadline',
      },
    });
  });
});
