import { describe, expect, it } from 'vitest';
import { AbortScope } from 'chainkit';

describe('AbortScope', () => {
  it('aborts linked children along with it, until unlinked, and a real signal follows', () => {
    const run = new AbortScope();
    const a = new AbortScope();
    const b = new AbortScope();
    run.link(a);
    run.link(b);
    run.unlink(b);
    const signal = a.signal;
    const seen: unknown[] = [];
    a.onAbort((r) => seen.push(r));
    run.abort('deadline');
    expect([a.aborted, a.reason, b.aborted]).toEqual([true, 'deadline', false]);
    expect(seen).toEqual(['deadline']);
    expect(signal.aborted && signal.reason).toBe('deadline');
    const late = new AbortScope();
    run.link(late); // linking to an aborted scope aborts at once
    expect(late.reason).toBe('deadline');
  });
});
