// A builder `ref(source)` with no path is the whole source: its path is '' and its value the source's type.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, type Ref } from 'chainkit';
import { setPriority } from './fixtures.js';

describe('builder ref without a path', () => {
  it("ref('len') is Ref<number, 'len', ''> and fits a number field", () => {
    const c = chain('whole', { input: z.object({ q: z.string() }) })
      .compute('len', (s) => s.input.q.length)
      .tool('set', setPriority, (ref) => {
        expectTypeOf(ref('len')).toEqualTypeOf<Ref<number, 'len', ''>>();
        return { id: ref('input', 'q'), level: ref('len') };
      })
      .build();
    expectTypeOf(c.name).toBeString();
  });

  it("ref('input') is the whole input; a wrong field type and a wrong source are still refused", () => {
    chain('whole_input', { input: z.object({ id: z.string(), level: z.number() }) })
      .tool('set', setPriority, (ref) => {
        expectTypeOf(ref('input')).toEqualTypeOf<Ref<{ id: string; level: number }, 'input', ''>>();
        return { id: ref('input', 'id'), level: ref('input', 'level') };
      });
    const base = chain('refused', { input: z.object({ id: z.string() }) }).compute('len', (s) => s.input.id.length).compute('name', (s) => s.input.id);
    // @ts-expect-error a string (the whole result of 'name') is not a number field
    base.tool('set', setPriority, (ref) => ({ id: ref('input', 'id'), level: ref('name') }));
    // @ts-expect-error no step 'nope'
    base.tool('set', setPriority, (ref) => ({ id: ref('nope'), level: ref('len') }));
  });
});
