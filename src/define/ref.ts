// References from a step's input to the chain input, the trusted context, or an earlier step's output.
import { DefinitionError } from '../errors/definition-error.js';
import { formatPath, getAtPath, parsePath, type PathSegment } from './path.js';

/** Something a chain can read from at run time: the chain input, the trusted context, or the results. */
export interface Scope<I = any, C = any, R = Record<string, any>> {
  readonly input: I;
  readonly context: C;
  /** Outputs of the steps completed so far, by step id (typed by step id in `output` and in the builder). */
  readonly results: Readonly<R>;
}

/**
 * A reference to a value in the scope: `source` is `'input'`, `'context'` or a step id,
 * `path` a dot path into it. Create with {@link ref}. `T` is the value's type where it is known
 * (refs made by a builder's `ref`); `S` and `P` keep the source and path as written, so chain
 * types can look the value up.
 *
 * @example
 * ```ts
 * ref('find', 'tasks[0].title') instanceof Ref; // true
 * ```
 */
export class Ref<T = any, S extends string = string, P extends string = string> {
  /**
   * Types only, never set: a mapped type over the path makes tsc compare two `Ref`s whose paths differ
   * member by member, so a ref built with a path that is a type parameter is a `Ref<any, S, string>`.
   *
   * @hidden
   */
  declare readonly [refPath]?: { readonly [K in P]?: 0 };
  /**
   * Types only, never set: what the ref reads, as a shape its sources must have (see {@link Readable}).
   *
   * @hidden
   */
  declare readonly [refNeeds]?: (sources: Needs<S, P>) => void;

  /** @internal */
  readonly segments: readonly PathSegment[];

  /** @internal */
  constructor(
    readonly source: S,
    readonly path: P,
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
  transform<U>(fn: (value: any) => U): Ref<U, S, P> {
    if (typeof fn !== 'function') throw new TypeError('Expected `fn` to be a function.');
    const prev = this.transformFn;
    return new Ref<U, S, P>(this.source, this.path, prev ? (v) => fn(prev(v)) : fn, this.segments);
  }

  /** Reads the referenced value from a scope. */
  resolve(scope: Scope): T {
    const source = this.source;
    // Own results only: a step `toString` that was skipped has no result, not Object's method.
    // `item`: the element of a forEach input's scope (which has one); elsewhere a step id like any other.
    const root =
      source === 'input'
        ? scope.input
        : source === 'context'
          ? scope.context
          : source === 'item' && 'item' in scope
            ? (scope as Scope & { item: unknown }).item
            : Object.hasOwn(scope.results, source)
              ? scope.results[source]
              : undefined;
    const value = this.segments.length === 0 ? root : getAtPath(root, this.segments);
    return this.transformFn ? this.transformFn(value) : (value as T);
  }

  /** `source.path`, for messages. */
  toString(): string {
    return this.segments.length ? `${this.source}.${formatPath(this.segments)}` : this.source;
  }
}

/** Keys of {@link Ref}'s types-only members (no value exists at run time). */
declare const refNeeds: unique symbol;
declare const refPath: unique symbol;

/**
 * What a ref with source `S` and path `P` reads, as a type its sources must be assignable to:
 * `ref('pick', 'address.city')` needs `{ pick: { address?: { city?: unknown } } }`. A declarative
 * chain's refs are all checked by one assignability check of its steps against {@link Readable}
 * (define/ref-check.ts): no union of every path is built.
 */
type Needs<S extends string, P extends string> = string extends S
  ? never // any ref (`Ref<any, string, string>`): every ref is one
  : {
      // A path known only as `string`: the source must exist (`any`, not `unknown`, so a generic path fits).
      readonly [K in S]: string extends P
        ? any
        : [P] extends ['']
          ? unknown
          : [IsUnion<P>] extends [false]
            ? NeedPath<P>
            : never;
    };
/** A path typed as a union of paths (`cond ? 'a' : 'b'`) is left to stage 2, where each must exist. */
type IsUnion<T, U = T> = T extends unknown ? ([U] extends [T] ? false : true) : never;
type NeedPath<P extends string> = [P] extends [`${infer H}.${infer Rest}`]
  ? Segment<H, NeedPath<Rest>>
  : Segment<P, unknown>;
/**
 * One segment: an index reads an array; a name reads a field the value has (one property in common, as
 * tsc checks for an all-optional type), which a string, number, boolean, Date, array or function does not
 * (their `valueOf`, `length` or `call` do not fit); the value may be missing (`undefined`: an optional
 * field, a skippable step). Not proven here, so checked exactly by stage 2 (define/ref-errors.ts): a
 * bracketed path, a value that may be `null`, a name of Object's members.
 */
type Segment<H extends string, N> =
  | ([H] extends [`${number}`]
      ? readonly N[]
      : [H] extends ['length']
        ? { readonly length?: N; readonly valueOf?: () => object }
        : // Every object seems to have `toString` and the rest of Object's members.
          [H] extends [keyof Object]
          ? never
          : { readonly [K in H]?: N } & NotALeaf)
  | undefined;
type NotALeaf = { readonly valueOf?: () => object; readonly length?: never; readonly call?: never };

/**
 * What a ref must be to read from `Sources` (an object of the input, the context and each step's
 * result by id): a ref is one when `Sources` has what it {@link Needs}.
 *
 * @example
 * ```ts
 * type Ok = Ref<any, 'input', 'q'> extends Readable<{ input: { q: string } }> ? true : false; // true
 * ```
 */
export type Readable<Sources> = { readonly [refNeeds]?: (sources: Sources) => void };

/**
 * References a value: the chain input, the trusted context, or an earlier step's output. The
 * source and path keep their literal types (a select step's items are typed from them); inside a
 * builder (`chain(...)`), the `ref` handed to each callback also checks them.
 *
 * @example
 * ```ts
 * ref('context', 'userId');          // the authenticated user
 * ref('find', 'tasks[0].task_id');   // first task found by step `find`
 * ```
 */
export function ref<T = any, S extends string = string>(source: S): Ref<T, S, ''>;
/**
 * References the value at `path` (a dot path, numeric indices allowed) inside the chain input,
 * the trusted context, or an earlier step's output. A malformed path (`a..b`, `.a`, `[x]`,
 * `a[0]b`, a `__proto__` segment) throws {@link DefinitionError}; at run time only own
 * properties are followed.
 *
 * @example
 * ```ts
 * ref('find', 'tasks.0.task_id');   // first task found by step `find`
 * ```
 */
export function ref<T = any, S extends string = string, P extends string = string>(source: S, path: P): Ref<T, S, P>;
export function ref(source: string, path = ''): Ref {
  if (typeof source !== 'string' || source === '') throw new TypeError('Expected `source` to be a non-empty string.');
  if (typeof path !== 'string') throw new TypeError('Expected `path` to be a string.');
  let segments: PathSegment[];
  try {
    segments = parsePath(path);
  } catch (error) {
    throw new DefinitionError(`ref('${source}', '${path}')`, [{ path: 'path', message: (error as Error).message }]);
  }
  return new Ref(source, path, undefined, segments);
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
