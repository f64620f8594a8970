// The comparison of a write's result as its run knows it against the one its key holds (after a store
// or a journal and back): the undo marks the key only when they are the same.
import { describe, expect, it } from 'vitest';
import { sameResult } from '../../src/policies/undone.js';
import { decodeKept, encodeKept } from '../../src/stores/run-codec.js';

describe('sameResult', () => {
  it('a result and its round trip through the stores’ codec are the same', () => {
    const value = { id: 't1', at: new Date(5), n: 10n, nan: NaN, gone: undefined, tags: ['a', { b: -0 }] };
    expect(sameResult(value, decodeKept(encodeKept(value)))).toBe(true);
    expect(sameResult({ a: undefined, b: 1 }, { b: 1 })).toBe(true);
  });

  it('another write’s result is not', () => {
    expect(sameResult({ id: 't1' }, { id: 't2' })).toBe(false);
    expect(sameResult({ id: 't1' }, { id: 't1', extra: 0 })).toBe(false);
    expect(sameResult({ at: new Date(1) }, { at: new Date(2) })).toBe(false);
    expect(sameResult({ at: new Date(1) }, { at: 1 })).toBe(false);
    expect(sameResult([1, 2], [1, 2, 3])).toBe(false);
    expect(sameResult([1], { 0: 1 })).toBe(false);
    expect(sameResult(null, {})).toBe(false);
    expect(sameResult(1n, 2n)).toBe(false);
    // Not plain data: the same only as itself (a Map's entries, a class's private state are no fields).
    expect(sameResult(new Map([['id', 't1']]), new Map([['id', 't2']]))).toBe(false);
    class Token {
      readonly #id: string;
      constructor(id: string) {
        this.#id = id;
      }
      get id(): string {
        return this.#id;
      }
    }
    expect(sameResult(new Token('a'), new Token('b'))).toBe(false);
    const one = new Token('a');
    expect(sameResult(one, one)).toBe(true);
  });
});
