// Dot paths with numeric indices (`tasks.0.id`, `tasks[0].id`): parsing, reading values, and zod introspection.
import type { Schema } from './schema.js';

export type PathSegment = string | number;

/** Refused as a path segment (and as a step id, mapping key or `where` field): it names the prototype. */
export const FORBIDDEN_KEY = '__proto__';

/**
 * Parses `a.b[0].c` / `a.b.0.c` into segments; throws a plain Error with a reason on bad syntax:
 * empty segments (`a..b`, `.a`, `a.`), brackets that hold no index (`[x]`, `a[-1]`), stray
 * brackets (`a]`, `a[0`, `a[0]b`) and `__proto__`.
 */
export function parsePath(path: string): PathSegment[] {
  const segments: PathSegment[] = [];
  const bad = (why: string): Error => new Error(`invalid path '${path}': ${why}`);
  const n = path.length;
  let i = 0;
  let afterDot = false;
  while (i < n) {
    const c = path[i];
    if (c === '[') {
      if (afterDot) throw bad('empty segment before [');
      const close = path.indexOf(']', i);
      if (close < 0) throw bad('[ without ]');
      const digits = path.slice(i + 1, close);
      const index = /^\d+$/.test(digits) ? Number(digits) : Number.NaN;
      if (!Number.isSafeInteger(index)) throw bad(`[${digits}] is not an array index`);
      segments.push(index);
      i = close + 1;
      if (i < n && path[i] !== '.' && path[i] !== '[') throw bad(`unexpected '${path[i]}' after ]`);
    } else if (c === '.') {
      if (afterDot || i === 0 || i === n - 1) throw bad('empty segment');
      afterDot = true;
      i++;
      continue;
    } else if (c === ']') {
      throw bad('] without [');
    } else {
      let j = i;
      while (j < n && path[j] !== '.' && path[j] !== '[' && path[j] !== ']') j++;
      const name = path.slice(i, j);
      if (name === FORBIDDEN_KEY) throw bad(`'${FORBIDDEN_KEY}' cannot be a path segment`);
      if (/^\d+$/.test(name)) {
        if (!Number.isSafeInteger(Number(name))) throw bad(`${name} is not an array index`);
        segments.push(Number(name));
      } else segments.push(name);
      i = j;
    }
    afterDot = false;
  }
  return segments;
}

/**
 * Reads a value at a path; `undefined` when any segment is missing. Only own properties are
 * followed (`length` of arrays and strings is own): `constructor` or `toString` of a value is not data.
 */
export function getAtPath(value: unknown, path: readonly PathSegment[]): unknown {
  let v = value;
  for (let i = 0; i < path.length; i++) {
    if (v === null || v === undefined) return undefined;
    const key = path[i]!;
    if (!Object.hasOwn(v, key)) return undefined;
    v = (v as Record<PathSegment, unknown>)[key];
  }
  return v;
}

/** The own property `key` of a record, if any (never an inherited one such as `constructor`). */
export function ownEntry<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Formats segments back into a display path (`tasks[0].id`). */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const s of path) out += typeof s === 'number' ? `[${s}]` : out === '' ? s : `.${s}`;
  return out;
}

/** The base kind of a schema, for static compatibility checks; `unknown` when it cannot tell. */
export type SchemaKind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null' | 'unknown';

type Def = { type: string; [k: string]: unknown };
const OPAQUE: Def = Object.freeze({ type: 'opaque' });
// A schema without zod internals (another Standard Schema) cannot be introspected: it reads as unknown.
const defOf = (s: Schema): Def => (s as unknown as { _zod?: { def?: Def } })._zod?.def ?? OPAQUE;

/**
 * A def-only array schema around `element`, for static checks of a select step's `expect: 'all'`
 * result (introspected, never parsed; so no zod copy is needed to build it).
 */
export function arrayOf(element: Schema): Schema {
  return { _zod: { def: { type: 'array', element } } } as unknown as Schema;
}

/** Strips wrappers that do not change the shape: optional, nullable, default, readonly, catch, prefault. */
function unwrap(schema: Schema, side: 'in' | 'out' = 'out'): Schema {
  let s = schema;
  for (let i = 0; i < 20; i++) {
    const def = defOf(s);
    if (['optional', 'nullable', 'default', 'readonly', 'catch', 'prefault', 'nonoptional'].includes(def.type)) {
      s = def.innerType as Schema;
    } else if (def.type === 'pipe') {
      s = (side === 'in' ? def.in : def.out) as Schema;
    } else if (def.type === 'lazy') {
      s = (def.getter as () => Schema)();
    } else {
      return s;
    }
  }
  return s;
}

/** The object shape of a schema, if it is (a wrapped) object. */
export function objectShape(schema: Schema, side: 'in' | 'out' = 'out'): Record<string, Schema> | undefined {
  const def = defOf(unwrap(schema, side));
  return def.type === 'object' ? (def.shape as Record<string, Schema>) : undefined;
}

/** The element schema of a schema, if it is (a wrapped) array. */
export function arrayElement(schema: Schema): Schema | undefined {
  const def = defOf(unwrap(schema));
  return def.type === 'array' ? (def.element as Schema) : undefined;
}

/** Base kind of a schema (after unwrapping). */
export function schemaKind(schema: Schema, side: 'in' | 'out' = 'out'): SchemaKind {
  const def = defOf(unwrap(schema, side));
  switch (def.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'object':
    case 'array':
    case 'null':
      return def.type;
    case 'int':
    case 'bigint':
      return 'number';
    case 'enum':
      return kindOfValues(Object.values(def.entries as object));
    case 'literal':
      return kindOfValues(def.values as unknown[]);
    case 'record':
      return 'object';
    case 'tuple':
      return 'array';
    default:
      return 'unknown';
  }
}

function kindOfValues(values: unknown[]): SchemaKind {
  const kinds = new Set(values.map((v) => (v === null ? 'null' : typeof v)));
  if (kinds.size !== 1) return 'unknown';
  const [k] = kinds;
  return k === 'string' || k === 'number' || k === 'boolean' || k === 'null' ? k : 'unknown';
}

/**
 * The schema found at `path` inside `schema`, walking objects and arrays through wrappers.
 * Returns `undefined` when the path does not exist, and `null` when it cannot be known
 * (e.g. a union or `z.any()` on the way), so callers only report paths that surely do not exist.
 */
export function schemaAtPath(schema: Schema, path: readonly PathSegment[]): Schema | undefined | null {
  let s = schema;
  for (const segment of path) {
    const inner = unwrap(s);
    const def = defOf(inner);
    if (def.type === 'object') {
      const shape = def.shape as Record<string, Schema>;
      const next = ownEntry(shape, String(segment));
      if (next) {
        s = next;
        continue;
      }
      const catchall = def.catchall as Schema | undefined;
      if (catchall && defOf(catchall).type !== 'never') {
        s = catchall;
        continue;
      }
      return undefined;
    }
    if (def.type === 'array') {
      if (typeof segment !== 'number' && segment !== 'length') return undefined;
      s = segment === 'length' ? (null as never) : (def.element as Schema);
      if (s === null) return null;
      continue;
    }
    if (def.type === 'record') {
      s = def.valueType as Schema;
      continue;
    }
    if (def.type === 'tuple') {
      const items = def.items as Schema[];
      const next = typeof segment === 'number' && segment < items.length ? items[segment] : undefined;
      if (!next) return undefined;
      s = next;
      continue;
    }
    if (['string', 'number', 'boolean', 'null', 'int', 'enum', 'literal', 'date', 'bigint'].includes(def.type))
      return undefined;
    return null;
  }
  return s;
}
