// Tools the nested-gate and nested-undo tests share: a save (an idempotent write) and its undo.
import { z } from 'zod';
import { defineTool } from 'chainkit';

export const save = defineTool({
  name: 'save',
  description: 'Save a thing',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  idempotent: true,
});
export const unsave = defineTool({
  name: 'unsave',
  description: 'Undo a save',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  idempotent: true,
});
