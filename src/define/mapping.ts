// Literal values in definitions (tool input mappings, `where` values): shape checks and compilation into resolvers.
import { FORBIDDEN_KEY } from './path.js';
import { isRef, type Ref, type Scope } from './ref.js';

/** Produces a step's tool input from the scope. */
export type Resolver = (scope: Scope) => unknown;

/** How deep a literal may nest; deeper is surely a mistake (and would overflow the stack somewhere). */
const MAX_LITERAL_DEPTH = 64;

/** True for `{}`-style objects (not arrays, class instances, or null-prototype objects). */
export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

/**
 * The first problem in a literal, with where it is (relative to `at`): a cycle, nesting deeper
 * than {@link MAX_LITERAL_DEPTH}, or a `__proto__` key. Refs, functions and other objects (Dates,
 * Maps, class instances) are leaves. A value shared twice is fine; only a value inside itself is a cycle.
 */
export function literalProblem(value: unknown, at: string): { path: string; message: string } | undefined {
  return walk(value, at, 0, new Set());
}

function walk(
  value: unknown,
  at: string,
  depth: number,
  ancestors: Set<object>,
): { path: string; message: string } | undefined {
  const array = Array.isArray(value);
  if (!array && !isPlainObject(value)) return undefined;
  const node = value as object;
  if (ancestors.has(node))
    return { path: at, message: 'this literal contains itself (a cycle); literals must be plain trees.' };
  if (depth >= MAX_LITERAL_DEPTH)
    return { path: at, message: `this literal is nested deeper than ${MAX_LITERAL_DEPTH} levels.` };
  ancestors.add(node);
  if (array) {
    const list = node as unknown[];
    for (let i = 0; i < list.length; i++) {
      const found = walk(list[i], `${at}[${i}]`, depth + 1, ancestors);
      if (found) return found;
    }
  } else {
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (key === FORBIDDEN_KEY)
        return {
          path: `${at}.${key}`,
          message: `'${FORBIDDEN_KEY}' cannot be a key: it would set the prototype of the built object.`,
        };
      const found = walk(record[key], `${at}.${key}`, depth + 1, ancestors);
      if (found) return found;
    }
  }
  ancestors.delete(node);
  return undefined;
}

/** A short JSON-ish rendering of a literal for messages; never throws (cycles, BigInt, odd objects). */
export function show(value: unknown): string {
  try {
    const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(value);
    return text.length > 80 ? `${text.slice(0, 80)}…` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * Compiles a checked literal (see {@link literalProblem}) into a resolver, collecting its refs;
 * literal subtrees are built once and shared.
 */
export function compileMapping(
  value: unknown,
  refs: Ref[],
): { constant: true; value: unknown } | { constant: false; fn: Resolver } {
  if (isRef(value)) {
    refs.push(value);
    return { constant: false, fn: (s) => value.resolve(s) };
  }
  if (Array.isArray(value)) {
    const parts = value.map((v) => compileMapping(v, refs));
    if (parts.every((p) => p.constant)) return { constant: true, value };
    return { constant: false, fn: (s) => parts.map((p) => (p.constant ? p.value : p.fn(s))) };
  }
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    const parts = keys.map((k) => compileMapping(value[k], refs));
    if (parts.every((p) => p.constant)) return { constant: true, value };
    return {
      constant: false,
      fn: (s) => {
        const out: Record<string, unknown> = {};
        for (let i = 0; i < keys.length; i++) {
          const p = parts[i]!;
          out[keys[i]!] = p.constant ? p.value : p.fn(s);
        }
        return out;
      },
    };
  }
  return { constant: true, value };
}

/** Visits every ref inside a checked literal; true when there was at least one. */
export function containsRef(value: unknown, visit: (r: Ref) => void): boolean {
  if (isRef(value)) {
    visit(value);
    return true;
  }
  let found = false;
  if (Array.isArray(value)) for (const v of value) found = containsRef(v, visit) || found;
  else if (isPlainObject(value)) for (const k of Object.keys(value)) found = containsRef(value[k], visit) || found;
  return found;
}
