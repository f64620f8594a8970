// `await using runner = createRunner(...)` closes the runner when the block ends.
import { describe, expect, it } from 'vitest';
import { createRunner, functionInvoker, type Runner } from 'chainkit';

// A closed runner refuses calls (synchronously or by rejecting): either way this rejects.
const call = (runner: Runner): Promise<unknown> => Promise.resolve().then(() => runner.invoke('missing', {}));

describe('Runner [Symbol.asyncDispose]', () => {
  it('closes the runner at the end of an `await using` block, also when the block throws', async () => {
    let outer: Runner | undefined;
    {
      await using runner = createRunner({ invoker: functionInvoker({}) });
      outer = runner;
      await expect(call(runner)).resolves.toBeDefined(); // open: calls are accepted
    }
    await expect(call(outer)).rejects.toThrow(/closed/);

    let thrown: Runner | undefined;
    await expect(
      (async () => {
        await using runner = createRunner({ invoker: functionInvoker({}) });
        thrown = runner;
        throw new Error('boom');
      })(),
    ).rejects.toThrow('boom');
    await expect(call(thrown!)).rejects.toThrow(/closed/);
  });

  it('is the same as close(): disposing twice, or after close(), is harmless', async () => {
    const runner = createRunner({ invoker: functionInvoker({}) });
    expect(typeof runner[Symbol.asyncDispose]).toBe('function');
    await runner.close();
    await expect(runner[Symbol.asyncDispose]()).resolves.toBeUndefined();
    await expect(runner[Symbol.asyncDispose]()).resolves.toBeUndefined();
  });
});
