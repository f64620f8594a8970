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

  it('notifies every listener once, in the order added, whichever were removed in between', () => {
    const scope = new AbortScope();
    const seen: string[] = [];
    const listen = (name: string) => scope.onAbort(() => seen.push(name));
    const offA = listen('a');
    const offB = listen('b');
    offA();
    listen('c');
    const offD = listen('d');
    offD();
    offB();
    listen('e');
    const child = new AbortScope();
    scope.link(child);
    scope.link(child); // linked twice: aborted once, like a Set
    child.onAbort(() => seen.push('child'));
    scope.abort('x');
    scope.abort('y'); // first call wins
    expect(seen).toEqual(['c', 'e', 'child']);
    expect(scope.reason).toBe('x');
    const off = listen('late'); // already aborted: called at once
    off();
    expect(seen.at(-1)).toBe('late');
  });
});
