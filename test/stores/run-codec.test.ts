// The run codec writes plain JSON values with JSON.stringify: the text must be what the checkpoint
// codec writes, and everything the codec tags or refuses must still go through it.
import { describe, expect, it } from 'vitest';
import { checkRunValue, encodeRunValue, storedRun } from '../../src/stores/run-codec.js';
import { CheckpointEncodeError, decodeCheckpoint, encodeCheckpoint } from '../../src/stores/serialize.js';

const encodeAll = (value: unknown): string => encodeCheckpoint(value as never);

describe('encodeRunValue', () => {
  const plain: unknown[] = [
    'text',
    '',
    'quote " and \\ and \u2028 and lone \ud800',
    0,
    1.5,
    -3,
    1e21,
    5e-324,
    true,
    false,
    null,
    [],
    [1, 'a', null, [true]],
    {},
    { a: 1, b: { c: [1, 2, { d: 'e' }] } },
    Object.assign(Object.create(null), { x: 1 }),
    { '': 1, 'key with "quotes"': 2, __proto__x: 3 },
    { 10: 'a', 2: 'b', z: 'c' },
    {
      runId: 'r1',
      trace: { steps: [{ stepNumber: 1, id: 'find', status: 'success', latencyMs: 0 }] },
      metadata: { advice: [] },
    },
  ];
  it.each(plain.map((v) => [JSON.stringify(v) ?? String(v), v]))(
    'writes plain JSON as the codec does: %s',
    (_, value) => {
      expect(encodeRunValue(value)).toBe(encodeAll(value));
      expect(decodeCheckpoint(encodeRunValue(value))).toEqual(value);
    },
  );

  const tagged: [string, unknown][] = [
    ['undefined', undefined],
    ['a key holding undefined', { a: undefined, b: 1 }],
    ['a hole', [1, , 3]],
    ['-0', -0],
    ['NaN', { n: Number.NaN }],
    ['Infinity', [Number.POSITIVE_INFINITY]],
    ['a Date', { at: new Date(5) }],
    ['a BigInt', { n: 10n }],
    ['the tag key', { $ck: 'date', v: 1 }],
    ['deep nesting', JSON.parse(`${'['.repeat(100)}1${']'.repeat(100)}`) as unknown],
  ];
  it.each(tagged)('leaves %s to the codec: same text, same value back', (_, value) => {
    expect(encodeRunValue(value)).toBe(encodeAll(value));
    expect(decodeCheckpoint(encodeRunValue(value))).toEqual(value);
  });

  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = cycle;
  const refused: [string, unknown][] = [
    ['a function', { f: () => 1 }],
    ['a symbol key', { [Symbol('s')]: 1 }],
    ['a cycle', cycle],
    ['a Map', { m: new Map() }],
    ['a toJSON method', { toJSON: () => 'x' }],
    [
      'a throwing getter',
      Object.defineProperty({}, 'x', {
        enumerable: true,
        get() {
          throw new Error('no');
        },
      }),
    ],
  ];
  it.each(refused)('refuses %s with the codec error (checkRunValue too)', (_, value) => {
    expect(() => encodeRunValue(value)).toThrow(CheckpointEncodeError);
    expect(() => checkRunValue(value)).toThrow(CheckpointEncodeError);
  });

  it('checkRunValue accepts what encodeRunValue encodes: plain JSON, and Dates, BigInts, undefined through the codec', () => {
    for (const value of [{ a: [1, 'x', null] }, { at: new Date(0), n: 2n ** 70n, u: undefined, x: Number.NaN }])
      expect(() => checkRunValue(value)).not.toThrow();
  });

  it('inherited enumerable keys do not leak in (JSON.stringify would skip them too, the codec decides)', () => {
    const value = Object.create({ inherited: 1 }) as Record<string, unknown>;
    value.own = 2;
    expect(() => encodeRunValue(value)).toThrow(CheckpointEncodeError); // a custom prototype is not plain data
  });

  it('a stored run reads back what was encoded', () => {
    const record = { runId: 'r', chain: 'c', input: { a: 1 }, approvedGate: 'g', result: 'x' };
    const run = storedRun(encodeRunValue(record), { status: 'running', owner: 'o', leaseUntil: 1, deadlineAt: 2 }, [
      encodeRunValue({ step: 'find', value: { n: 1 } }),
    ]);
    expect(run).toMatchObject({
      runId: 'r',
      chain: 'c',
      input: { a: 1 },
      status: 'running',
      journal: [{ step: 'find', value: { n: 1 } }],
    });
    expect(run).not.toHaveProperty('approvedGate');
  });
});
