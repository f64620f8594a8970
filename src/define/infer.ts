// Types only: the dot paths into a type, the value at a path, and the types a chain's mappings take.
// Every recursion here is bounded (paths: 6 segments) or tail-recursive, so a 30-step chain stays far
// below the compiler's depth and instantiation limits. What each step yields: define/step-results.ts.
import type { Schema, SchemaInput, SchemaOutput } from './schema.js';
import type { Ref } from './ref.js';

/** True when `T` is `any`. */
type IsAny<T> = 0 extends 1 & T ? true : false;
/** Values a path cannot walk into. */
type Leaf = string | number | boolean | bigint | symbol | null | undefined | Date | ((...args: never[]) => unknown);
/** The depth budget of {@link PathOf}: `Down[D]` is one less than `D`. */
type Down = [never, 0, 1, 2, 3, 4, 5];

/**
 * Every dot path into `T` (numeric indices for arrays), up to 6 segments deep: what a typed
 * `ref(source, path)` accepts. `any` and `unknown` accept every path.
 *
 * @example
 * ```ts
 * type P = PathOf<{ tasks: { id: string }[] }>; // 'tasks' | `tasks.${number}` | `tasks.${number}.id`
 * ```
 */
export type PathOf<T> = Paths<T, 6>;
type Paths<T, D extends number> =
  IsAny<T> extends true
    ? string
    : unknown extends T
      ? string
      : [D] extends [never]
        ? never
        : PathsIn<NonNullable<T>, D>;
type PathsIn<T, D extends number> = T extends Leaf
  ? never
  : T extends readonly unknown[]
    ? `${number}` | `${number}.${Paths<T[number], Down[D]>}`
    : { [K in keyof T & string]-?: K | `${K}.${Paths<T[K], Down[D]>}` }[keyof T & string];

/**
 * The type of the value at `path` inside `T` (dot or bracket indices); `undefined` joins it where
 * the way there may be missing (an optional field, a union member without the key).
 *
 * @example
 * ```ts
 * type V = ValueAt<{ tasks: { id: string }[] }, 'tasks.0.id'>; // string
 * ```
 */
export type ValueAt<T, P extends string> = string extends P
  ? unknown
  : P extends ''
    ? T
    : Walk<T, Segments<Brackets<P>>>;
type Brackets<P extends string> = P extends `${infer A}[${infer N}]${infer B}` ? Brackets<`${A}.${N}${B}`> : P;
type Segments<P extends string> = P extends `${infer H}.${infer R}` ? [H, ...Segments<R>] : [P];
type Walk<T, S extends readonly string[]> = S extends readonly [infer H extends string, ...infer R extends string[]]
  ? Walk<Get<T, H>, R>
  : T;
type Get<T, K extends string> = IsAny<T> extends true ? any : unknown extends T ? unknown : GetIn<T, K>;
type GetIn<T, K extends string> = T extends null | undefined
  ? undefined
  : T extends readonly unknown[]
    ? K extends `${number}`
      ? K extends keyof T
        ? T[K]
        : T[number]
      : K extends 'length'
        ? number
        : undefined
    : K extends keyof T
      ? T[K]
      : // A number key (`Record<number, V>`, `{ 0: V }`), written as text in the path.
        K extends `${infer I extends number}`
        ? I extends keyof T
          ? T[I]
          : undefined
        : undefined;

/**
 * Checks a ref's `path` into a value of type `T` read from `Source` (`'input'`, `'context'`, a step
 * id): `P` itself when the path exists, else the message a reader needs, naming the wrong segment
 * and what is valid at that level (`'emial' is not a field of step contact: id, name, email`).
 * It is the type of the path parameter, so the mistake is reported at the path argument. Walks
 * only the segments written (no union of every path is built); `any`/`unknown` accept every path.
 *
 * @example
 * ```ts
 * type Tasks = { tasks: { title: string }[] };
 * type Ok = RefPath<Tasks, 'tasks.0.title', 'input'>;  // 'tasks.0.title'
 * type No = RefPath<Tasks, 'tasks.0.titel', 'input'>;  // "'titel' is not a field of tasks.0 in the input: title"
 * ```
 */
export type RefPath<T, P extends string, Source extends string> = string extends P
  ? P
  : P extends ''
    ? P
    : Check<T, Segments<Brackets<P>>, '', Source> extends infer E extends string
      ? E
      : P;
/**
 * The value at a path already checked by {@link RefPath}: `any`
 * when it does not exist (the path argument carries the error).
 *
 * @example
 * ```ts
 * type V = RefValueAt<{ tasks: { title: string }[] }, 'tasks.0.title', 'input'>; // string
 * ```
 */
export type RefValueAt<T, P extends string, Source extends string> = [RefPath<T, P, Source>] extends [P]
  ? ValueAt<T, P>
  : any;
/** `true` when every segment exists, else the message (a string). Tail-recursive over the segments written. */
type Check<T, S extends readonly string[], At extends string, Source extends string> = S extends readonly [
  infer H extends string,
  ...infer R extends string[],
]
  ? IsAny<T> extends true
    ? true
    : unknown extends T
      ? true
      : // A segment only known as a string (a template literal path) cannot be checked.
        string extends H
        ? true
        : H extends KeysOf<NonNullable<T>>
          ? Check<Get<T, H>, R, At extends '' ? H : `${At}.${H}`, Source>
          : Miss<NonNullable<T>, H, At, Source>
  : true;
/**
 * The segments valid after a value of type `N` (any member of a union): fields (number keys as text),
 * or indices and `length` of arrays.
 */
type KeysOf<N> = N extends readonly unknown[]
  ? `${number}` | 'length'
  : N extends Leaf
    ? never
    : (keyof N & string) | `${keyof N & number}`;
/** Where a path stopped, for messages: `step contact`, `the input`, `tasks.0 in the input`. */
type Where<At extends string, Source extends string> = `${AtIn<At>}${SourceName<Source>}`;
type AtIn<At extends string> = At extends '' ? '' : `${At} in `;
type SourceName<Source extends string> = Source extends 'input' | 'context' | 'item'
  ? `the ${Source}`
  : `step ${Source}`;
type AtDot<At extends string> = At extends '' ? '' : `${At}.`;
type LeafKind<N> = N extends string
  ? 'a string'
  : N extends number
    ? 'a number'
    : N extends boolean
      ? 'a boolean'
      : 'a value without fields';
type Miss<N, H extends string, At extends string, Source extends string> = [N] extends [never]
  ? `'${H}' cannot be read: ${Where<At, Source>} is null or undefined`
  : [N] extends [readonly unknown[]]
    ? `'${H}' is not an index: ${Where<At, Source>} is an array, so an index comes first (${AtDot<At>}0.${H})`
    : [N] extends [Leaf]
      ? `'${H}' is not a field: ${Where<At, Source>} is ${LeafKind<N>}`
      : [KeysOf<N>] extends [never]
        ? `'${H}' is not a field: ${Where<At, Source>} has no fields`
        : `'${H}' is not a field of ${Where<At, Source>}: ${FieldList<KeysOf<N>>}`;
/** The valid segments, listed; a record by number's keys read `any number` (not a `${number}` pattern). */
type FieldList<K extends string> = `${number}` extends K
  ? [Exclude<K, `${number}`>] extends [never]
    ? 'any number'
    : `${Join<Exclude<K, `${number}`>>}, or any number`
  : Join<K>;
/** The last member of a union (the compiler's order, which is declaration order for an object's keys). */
type LastOf<U> = (U extends unknown ? (x: () => U) => void : never) extends (x: infer F) => void
  ? F extends () => infer L
    ? L
    : never
  : never;
/** `a, b, c` from a union of names; only built for a message, at most 24 names. */
type Join<U, Acc extends string = '', N extends unknown[] = []> = [U] extends [never]
  ? Acc
  : N['length'] extends 24
    ? `…, ${Acc}`
    : LastOf<U> extends infer L extends string
      ? Join<Exclude<U, L>, Acc extends '' ? L : `${L}, ${Acc}`, [...N, 0]>
      : Acc;

/**
 * The item type of an array type (through `null`/`undefined`): what a select step picks.
 *
 * @example
 * ```ts
 * type T = ElementOf<{ id: string }[] | undefined>; // { id: string }
 * ```
 */
export type ElementOf<V> = IsAny<V> extends true ? any : NonNullable<V> extends readonly (infer X)[] ? X : unknown;

/**
 * A tool input mapping checked against the input type `In` (what the tool's schema accepts): each
 * field a literal of its type, a ref to a value of its type, or, for objects and arrays, a nested
 * mapping of them. Fields the tool does not have are errors.
 *
 * @example
 * ```ts
 * const m: MappingOf<{ user_id: string; status?: 'all' | 'pending' }> = {
 *   user_id: ref('context', 'userId'),
 *   status: 'all',
 * };
 * ```
 */
export type MappingOf<In> = { [K in keyof In]: FieldValue<In[K]> };
type FieldValue<V> =
  | V
  | Ref<V, string, string>
  | (IsAny<V> extends true
      ? never
      : NonNullable<V> extends Leaf
        ? never
        : NonNullable<V> extends readonly (infer E)[]
          ? readonly FieldValue<E>[]
          : MappingOf<NonNullable<V>>);

/**
 * The field matchers of a select step over items of type `X`: `equals` a value of the field's type,
 * `contains` a string, `in` a list of values; each may be a ref to such a value.
 *
 * @example
 * ```ts
 * const w: WhereOf<{ title: string; done: boolean }> = {
 *   title: { contains: ref('input', 'match') },
 *   done: { equals: false },
 * };
 * ```
 */
export type WhereOf<X> = unknown extends X
  ? Record<string, { equals?: unknown; contains?: unknown; in?: unknown }>
  : {
      [K in keyof X]?: {
        equals?: X[K] | Ref<X[K], string, string>;
        contains?: string | Ref<string, string, string>;
        in?: readonly X[K][] | Ref<readonly X[K][], string, string>;
      };
    };

/**
 * The context type of a chain whose context schema is `CS` (no schema: whatever the caller passes).
 *
 * @example
 * ```ts
 * type C = ContextOf<typeof userContext>; // { userId: string }
 * ```
 */
export type ContextOf<CS> = CS extends Schema ? SchemaOutput<CS> : Record<string, unknown>;
/**
 * What `run` accepts as the context of a chain whose context schema is `CS` (no schema: optional).
 *
 * @example
 * ```ts
 * type C = ContextInputOf<undefined>; // Record<string, unknown> | undefined
 * ```
 */
export type ContextInputOf<CS> = CS extends Schema ? SchemaInput<CS> : Record<string, unknown> | undefined;

/**
 * What a select step yields: the item type of its `from` value, an array of them for `expect: 'all'`.
 *
 * @example
 * ```ts
 * type One = SelectResult<Task[], 'one'>; // Task
 * type All = SelectResult<Task[], 'all'>; // Task[]
 * ```
 */
export type SelectResult<V, E> = E extends 'all' ? ElementOf<V>[] : ElementOf<V>;

/** The value a ref reads, given the chain input `I`, context `C` and the results `R` so far. */
export type RefValueIn<F, I, C, R> =
  F extends Ref<infer T, infer S, infer P>
    ? IsAny<T> extends true
      ? ValueAt<S extends 'input' ? I : S extends 'context' ? C : S extends keyof R ? R[S] : unknown, P>
      : T
    : unknown;
