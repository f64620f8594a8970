import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, isDefinitionError, type RateLimitSpec, type ToolCall } from 'chainkit';
import type { RateLimitKeyCall } from '../../src/define/tool.js';

// Limits keyed by a function of the call's trusted context; `per: 'user'` is sugar for one such key.
describe('rate limits keyed by a function', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const tool = (rateLimit: RateLimitSpec) =>
    defineTool({
      name: 'keyed',
      description: 'k',
      input: z.object({ i: z.number() }),
      output: z.object({ i: z.number() }),
      effect: 'read',
      rateLimit,
    });
  /** A runner over `rateLimit` whose invoker records which tenant/user each attempt ran for, and when. */
  const setup = (rateLimit: RateLimitSpec) => {
    const starts: { who: string; at: number }[] = [];
    const t0 = Date.now();
    const invoker = async (c: ToolCall) => {
      starts.push({ who: String(c.context.tenant ?? c.context.userId ?? '-'), at: Date.now() - t0 });
      return c.input;
    };
    const runner = createRunner({ invoker, tools: [tool(rateLimit)] });
    const call = (context: Record<string, unknown>, i: number) =>
      runner.invoke('keyed', { i }, { context, timeoutMs: 120_000 });
    const startsOf = (who: string) => starts.filter((s) => s.who === who).map((s) => s.at);
    return { runner, call, startsOf };
  };

  it('limits two keys separately: one tenant past its limit waits, the other starts at once', async () => {
    const { runner, call, startsOf } = setup({
      limit: 2,
      intervalMs: 1000,
      key: (c) => (typeof c.context.tenant === 'string' ? c.context.tenant : undefined),
    });
    const acme = [0, 1, 2].map((i) => call({ tenant: 'acme' }, i));
    await vi.advanceTimersByTimeAsync(0);
    const globex = [0, 1].map((i) => call({ tenant: 'globex' }, i));
    await vi.advanceTimersByTimeAsync(0);
    expect(startsOf('acme')).toEqual([0, 0]);
    expect(startsOf('globex')).toEqual([0, 0]); // acme's full window is not globex's
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('acme')).toEqual([0, 0, 1000]);
    expect((await Promise.all([...acme, ...globex])).map((r) => r.status)).toEqual(Array(5).fill('completed'));
    await runner.close();
  });

  it('hands the key function the call: tool, step, run and session ids, and the trusted context', async () => {
    const seen: RateLimitKeyCall[] = [];
    const { runner } = setup({
      limit: 5,
      intervalMs: 1000,
      key: (c) => {
        seen.push(c);
        return 'k';
      },
    });
    await runner.invoke('keyed', { i: 1 }, { context: { tenant: 'acme' }, sessionId: 's1' });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ tool: 'keyed', step: 'keyed', sessionId: 's1', context: { tenant: 'acme' } });
    expect(typeof seen[0]!.runId).toBe('string');
    await runner.close();
  });

  it("keeps per: 'user' working as the sugar for key: (call) => call.context.userId", async () => {
    for (const rateLimit of [
      { limit: 1, intervalMs: 1000, per: 'user' },
      { limit: 1, intervalMs: 1000, key: (c: RateLimitKeyCall) => c.context.userId as string },
    ] satisfies RateLimitSpec[]) {
      const { runner, call, startsOf } = setup(rateLimit);
      const calls = [call({ userId: 'alice' }, 0), call({ userId: 'alice' }, 1), call({ userId: 'bob' }, 2)];
      await vi.advanceTimersByTimeAsync(0);
      expect([startsOf('alice'), startsOf('bob')]).toEqual([[0], [0]]);
      await vi.advanceTimersByTimeAsync(1000);
      expect(startsOf('alice')).toEqual([0, 1000]);
      expect((await Promise.all(calls)).every((r) => r.status === 'completed')).toBe(true);
      await runner.close();
    }
  });

  it("per: 'user' with numeric user ids keeps each user apart (they shared the anonymous limit)", async () => {
    const { runner, call, startsOf } = setup({ limit: 1, intervalMs: 1000, per: 'user' });
    const calls = [call({ userId: 1 }, 0), call({ userId: 2 }, 1), call({ userId: 1 }, 2)];
    await vi.advanceTimersByTimeAsync(0);
    expect([startsOf('1'), startsOf('2')]).toEqual([[0], [0]]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('1')).toEqual([0, 1000]);
    expect((await Promise.all(calls)).every((r) => r.status === 'completed')).toBe(true);
    await runner.close();
  });

  it("puts calls the key function gives no key for (undefined, '', or a throw) in one shared 'anonymous' limit, apart from keyed ones", async () => {
    const { runner, call, startsOf } = setup({
      limit: 1,
      intervalMs: 1000,
      key: (c) => {
        if (c.context.tenant === 'boom') throw new Error('broken key function');
        return c.context.tenant === '' ? '' : (c.context.tenant as string | undefined);
      },
    });
    const keyless = [call({}, 0), call({ tenant: '' }, 1), call({ tenant: 'boom' }, 2)];
    const keyed = call({ tenant: 'acme' }, 3);
    await vi.advanceTimersByTimeAsync(0);
    expect(startsOf('acme')).toEqual([0]); // its own limit
    expect([...startsOf('-'), ...startsOf(''), ...startsOf('boom')]).toEqual([0]); // the three share one: one slot per second
    await vi.advanceTimersByTimeAsync(2000);
    expect([...startsOf('-'), ...startsOf(''), ...startsOf('boom')].sort((a, b) => a - b)).toEqual([0, 1000, 2000]);
    expect((await Promise.all([...keyless, keyed])).every((r) => r.status === 'completed')).toBe(true);
    await runner.close();
  });

  it('refuses a key that is not a function, and per and key together', () => {
    const problems = (rateLimit: unknown) => {
      try {
        tool(rateLimit as RateLimitSpec);
      } catch (error) {
        if (isDefinitionError(error)) return error.issues.map((i) => `${i.path}: ${i.message}`);
        throw error;
      }
      return [];
    };
    expect(problems({ limit: 1, intervalMs: 1000, key: 'userId' })).toEqual([
      'rateLimit.key: Expected `key` to be a function (call) => string | undefined.',
    ]);
    expect(problems({ limit: 1, intervalMs: 1000, per: 'user', key: () => 'k' })).toEqual([
      "rateLimit.per: Give either `per` or `key`, not both: `per: 'user'` is `key: (call) => call.context.userId`.",
    ]);
    expect(problems({ limit: 1, intervalMs: 1000 })).toEqual([
      "rateLimit.per: Expected `per` to be 'global' or 'user'.",
    ]);
    expect(problems({ limit: 1, intervalMs: 1000, key: () => 'k' })).toEqual([]);
  });
});
