// The one serialization of checkpoints, shared by every store: JSON plus tagged Date, BigInt,
// undefined and non-finite numbers; anything else it cannot keep is refused before it is stored.
import { StoreFailure } from './guard.js';
import type { Checkpoint } from './types.js';

/** Nesting deeper than this is refused rather than risking the stack on decode. */
const MAX_DEPTH = 1000;
/** The tag key. A plain object that has it as an own key is wrapped, so user data never reads as a tag. */
const TAG = '$ck';

/**
 * A checkpoint holds a value the stores cannot keep (a function, a symbol, a cycle, a class
 * instance such as a Map, …). Category `validation`, code `checkpoint_unserializable`: the run
 * fails before a resume token is handed out. It is a `StoreFailure` (chainkit's own store
 * error) so store guards pass it through unchanged; `info` carries the classification.
 *
 * @example
 * ```ts
 * try { await store.save(checkpoint); } catch (e) { if (e instanceof CheckpointEncodeError) console.log(e.path); }
 * ```
 */
export class CheckpointEncodeError extends StoreFailure {
  /** Where the value sits, e.g. `results.fetch.callback`. */
  readonly path: string;
  constructor(path: string, what: string) {
    super({
      category: 'validation',
      code: 'checkpoint_unserializable',
      message:
        `The checkpoint cannot be stored: ${path} ${what}. ` +
        'Step results kept across a confirmation must be JSON values, Dates or BigInts.',
    });
    this.path = path;
  }
}

/**
 * Encodes a checkpoint as a JSON string; Dates, BigInts, `undefined`, `NaN`, ±Infinity and -0
 * survive the round trip. Throws {@link CheckpointEncodeError} for anything else that is not
 * plain data (functions, symbols, cycles, class instances, symbol keys, getters that throw).
 *
 * @example
 * ```ts
 * const text = encodeCheckpoint(checkpoint); // store it anywhere that keeps strings
 * ```
 */
export function encodeCheckpoint(checkpoint: Checkpoint): string {
  const out: string[] = [];
  try {
    encode(checkpoint, out, [], new Set());
  } catch (error) {
    if (error instanceof CheckpointEncodeError) throw error;
    // A throwing getter, a hostile Proxy, a stack overflow: still a clear refusal, never a crash.
    throw new CheckpointEncodeError(
      'checkpoint',
      `could not be read (${error instanceof Error ? error.message : typeof error})`,
    );
  }
  return out.join('');
}

/**
 * Decodes what {@link encodeCheckpoint} produced. Every call returns a fresh copy.
 *
 * @example
 * ```ts
 * const checkpoint = decodeCheckpoint(text);
 * ```
 */
export function decodeCheckpoint(text: string): Checkpoint {
  return decode(JSON.parse(text), 0) as Checkpoint;
}

function pathOf(path: readonly (string | number)[]): string {
  let s = '';
  for (const p of path)
    s +=
      typeof p === 'number'
        ? `[${p}]`
        : /^[A-Za-z_$][\w$]*$/.test(p)
          ? s
            ? `.${p}`
            : p
          : `[${JSON.stringify(p.length > 60 ? `${p.slice(0, 60)}…` : p)}]`;
  return s || 'checkpoint';
}

const tagged = (type: string, v: string): string => `{"${TAG}":"${type}","v":${v}}`;

function encode(value: unknown, out: string[], path: (string | number)[], seen: Set<object>): void {
  switch (typeof value) {
    case 'string':
      out.push(JSON.stringify(value));
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'number':
      if (Number.isFinite(value) && !Object.is(value, -0)) out.push(String(value));
      else out.push(tagged('num', JSON.stringify(String(Object.is(value, -0) ? '-0' : value))));
      return;
    case 'bigint':
      out.push(tagged('bigint', JSON.stringify(value.toString())));
      return;
    case 'undefined':
      out.push(`{"${TAG}":"undefined"}`);
      return;
    case 'function':
      throw new CheckpointEncodeError(pathOf(path), 'is a function');
    case 'symbol':
      throw new CheckpointEncodeError(pathOf(path), 'is a symbol');
  }
  if (value === null) {
    out.push('null');
    return;
  }
  const obj = value as object;
  if (seen.has(obj)) throw new CheckpointEncodeError(pathOf(path), 'refers back to itself (a cycle)');
  if (path.length >= MAX_DEPTH)
    throw new CheckpointEncodeError(pathOf(path.slice(0, 8)), `is nested deeper than ${MAX_DEPTH} levels`);
  if (obj instanceof Date) {
    const t = obj.getTime();
    out.push(tagged('date', Number.isFinite(t) ? String(t) : 'null'));
    return;
  }
  seen.add(obj);
  if (Array.isArray(obj)) {
    out.push('[');
    for (let i = 0; i < obj.length; i++) {
      if (i > 0) out.push(',');
      path.push(i);
      encode(obj[i], out, path, seen);
      path.pop();
    }
    out.push(']');
  } else {
    const proto = Object.getPrototypeOf(obj) as object | null;
    if (proto !== Object.prototype && proto !== null) {
      const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
      const what = typeof name === 'string' && name ? `an instance of ${name}` : 'an object with a custom prototype';
      throw new CheckpointEncodeError(pathOf(path), `is ${what}, not plain data`);
    }
    if (Object.getOwnPropertySymbols(obj).length > 0) throw new CheckpointEncodeError(pathOf(path), 'has symbol keys');
    const keys = Object.keys(obj);
    // An object that has the tag key itself is kept as key/value pairs: it can never be read as a tag.
    const wrap = Object.hasOwn(obj, TAG);
    out.push(wrap ? `{"${TAG}":"object","v":[` : '{');
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (i > 0) out.push(',');
      out.push(wrap ? `[${JSON.stringify(key)},` : `${JSON.stringify(key)}:`);
      path.push(key);
      encode((obj as Record<string, unknown>)[key], out, path, seen);
      path.pop();
      if (wrap) out.push(']');
    }
    out.push(wrap ? ']}' : '}');
  }
  seen.delete(obj); // a value shared by two branches is fine (kept twice); only a cycle is refused
}

// Own data property: `__proto__` and friends stay plain keys, never a prototype change.
const define = (obj: object, key: string, value: unknown): void => {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
};

/** Replaces tags in what JSON.parse produced (which has only own data properties). */
function decode(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i] as unknown;
      if (typeof v === 'object' && v !== null) value[i] = decode(v, depth + 1);
    }
    return value;
  }
  const obj = value as Record<string, unknown>;
  if (Object.hasOwn(obj, TAG)) return untag(obj, depth);
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (typeof v !== 'object' || v === null) continue;
    const d = decode(v, depth + 1);
    if (d !== v) define(obj, key, d);
  }
  return obj;
}

function untag(obj: Record<string, unknown>, depth: number): unknown {
  const v = obj.v;
  switch (obj[TAG]) {
    case 'date':
      return new Date(typeof v === 'number' ? v : NaN);
    case 'bigint':
      return BigInt(v as string);
    case 'num':
      return v === '-0' ? -0 : Number(v);
    case 'undefined':
      return undefined;
    case 'object': {
      const result: Record<string, unknown> = {};
      for (const [key, item] of v as [string, unknown][]) define(result, key, decode(item, depth + 1));
      return result;
    }
    default:
      throw new Error(`The stored checkpoint has an unknown tag ${JSON.stringify(obj[TAG])}.`);
  }
}
