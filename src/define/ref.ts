// References from a step's input to the chain input, the trusted context, or an earlier step's output.
import { formatPath, getAtPath, parsePath, type PathSegment } from './path.js';

/** Something a chain can read from at run time: the chain input, the trusted context, or the results. */
export interface Scope<I = any, C = any> {
  readonly input: I;
  readonly context: C;
  /** Outputs of the steps completed so far, by step id. */
  readonly results: Readonly<Record<string, any>>;
}

/**
 * A reference to a value in the scope: `source` is `'input'`, `'context'` or a step id,
 * `path` a dot path into it. Create with {@link ref}.
 *
 * @example
 * ```ts
 * ref('find', 'tasks[0].title') instanceof Ref; // true
 * ```
 */
export class Ref<T = any> {
  /** @internal */
  readonly segments: readonly PathSegment[];

  /** @internal */
  constructor(
    readonly source: string,
    readonly path: string,
    /** Converts the value read; set through {@link Ref.transform}. */
    readonly transformFn?: (value: any) => T,
    segments?: readonly PathSegment[],
  ) {
    this.segments = segments ?? parsePath(path);
  }

  /**
   * Converts the referenced value before it is used (and lifts the static type check).
   *
   * @example
   * ```ts
   * ref('input', 'done').transform((d: boolean) => (d ? 'completed' : 'pending'))
   * ```
   */
  transform<U>(fn: (value: any) => U): Ref<U> {
    if (typeof fn !== 'function') throw new TypeError('Expected `fn` to be a function.');
    const prev = this.transformFn;
    return new Ref<U>(this.source, this.path, prev ? (v) => fn(prev(v)) : fn, this.segments);
  }

  /** Reads the referenced value from a scope. */
  resolve(scope: Scope): T {
    const root = this.source === 'input' ? scope.input : this.source === 'context' ? scope.context : scope.results[this.source];
    const value = this.segments.length === 0 ? root : getAtPath(root, this.segments);
    return this.transformFn ? this.transformFn(value) : (value as T);
  }

  /** `source.path`, for messages. */
  toString(): string {
    return this.segments.length ? `${this.source}.${formatPath(this.segments)}` : this.source;
  }
}

/**
 * References a value: the chain input, the trusted context, or an earlier step's output.
 *
 * @example
 * ```ts
 * ref('context', 'userId');          // the authenticated user
 * ref('find', 'tasks[0].task_id');   // first task found by step `find`
 * ```
 */
export function ref<T = any>(source: string, path = ''): Ref<T> {
  if (typeof source !== 'string' || source === '') throw new TypeError('Expected `source` to be a non-empty string.');
  if (typeof path !== 'string') throw new TypeError('Expected `path` to be a string.');
  return new Ref<T>(source, path);
}

/**
 * Type guard for {@link Ref}.
 *
 * @example
 * ```ts
 * isRef(ref('input', 'match')); // true
 * ```
 */
export function isRef(value: unknown): value is Ref {
  return value instanceof Ref;
}
