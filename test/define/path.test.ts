import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ref } from 'chainkit';
import { parsePath, schemaAtPath, schemaKind } from '../../src/define/path.js';

describe('paths and refs', () => {
  it('parses dot and bracket indices alike', () => {
    expect(parsePath('tasks.0.task_id')).toEqual(['tasks', 0, 'task_id']);
    expect(parsePath('tasks[0].task_id')).toEqual(['tasks', 0, 'task_id']);
    expect(() => parsePath('a..b')).toThrow(/empty segment/);
  });

  it('resolves refs from input, context and results, with transforms', () => {
    const scope = { input: { done: true }, context: { userId: 'u' }, results: { find: { tasks: [{ id: 'x' }] } } };
    expect(ref('context', 'userId').resolve(scope)).toBe('u');
    expect(ref('find', 'tasks[0].id').resolve(scope)).toBe('x');
    expect(ref('find', 'tasks.5.id').resolve(scope)).toBeUndefined();
    expect(
      ref('input', 'done')
        .transform((d: boolean) => (d ? 'completed' : 'pending'))
        .resolve(scope),
    ).toBe('completed');
    expect(String(ref('find', 'tasks[0].id'))).toBe('find.tasks[0].id');
  });

  it('walks zod schemas through wrappers', () => {
    const s = z.object({
      a: z
        .array(z.object({ b: z.number() }))
        .optional()
        .nullable()
        .default([]),
      u: z.union([z.string(), z.number()]),
    });
    expect(schemaKind(schemaAtPath(s, ['a', 0, 'b'])!)).toBe('number');
    expect(schemaAtPath(s, ['a', 0, 'c'])).toBeUndefined();
    expect(schemaAtPath(s, ['nope'])).toBeUndefined();
    expect(schemaAtPath(s, ['u', 'x'])).toBeNull(); // unknowable, not reported
  });
});
