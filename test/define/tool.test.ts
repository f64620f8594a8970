import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, DefinitionError } from 'chainkit';

const base = { name: 'ok_tool', description: 'A tool', input: z.object({}), output: z.object({}) };

describe('defineTool', () => {
  it('applies defaults', () => {
    const t = defineTool(base);
    expect(t).toMatchObject({ name: 'ok_tool', effect: 'write', timeoutMs: 10_000, suggests: [] });
    expect(Object.isFrozen(t)).toBe(true);
  });

  it('lists every problem of a bad spec at once', () => {
    const bad = {
      name: '1bad name',
      description: '',
      input: {},
      output: 'x',
      effect: 'delete',
      timeoutMs: -1,
      retry: { retries: -1, factor: 0.5 },
      rateLimit: { limit: 0, intervalMs: 0, per: 'tenant' },
      suggests: [{ tool: 1 }],
    };
    let error: DefinitionError | undefined;
    try {
      defineTool(bad as never);
    } catch (e) {
      error = e as DefinitionError;
    }
    expect(error).toBeInstanceOf(DefinitionError);
    const paths = error!.issues.map((i) => i.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'name',
        'description',
        'input',
        'output',
        'effect',
        'timeoutMs',
        'retry.retries',
        'retry.factor',
        'rateLimit.limit',
        'rateLimit.intervalMs',
        'rateLimit.per',
        'suggests[0]',
      ]),
    );
    expect(error!.message).toContain('12 problems');
  });

  it('accepts retry: false', () => {
    expect(defineTool({ ...base, retry: false }).retry).toBe(false);
  });
});
