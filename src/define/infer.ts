// Types only: the dot paths into a type, the value at a path, and what each step of a chain yields.
// Every recursion here is bounded (paths: 6 segments) or tail-recursive (the step fold), so a
// 30-step chain stays far below the compiler's depth and instantiation limits.
import type { Schema, SchemaInput, SchemaOutput } from './schema.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Ref } from './ref.js';
import type { Tool } from './tool.js';

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
/** The segments valid after a value of type `N` (any member of a union): fields, or indices and `length` of arrays. */
type KeysOf<N> = N extends readonly unknown[] ? `${number}` | 'length' : N extends Leaf ? never : keyof N & string;
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
      : `'${H}' is not a field of ${Where<At, Source>}: ${Join<KeysOf<N>>}`;
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
type RefValue<F, I, C, R> =
  F extends Ref<infer T, infer S, infer P>
    ? IsAny<T> extends true
      ? ValueAt<S extends 'input' ? I : S extends 'context' ? C : S extends keyof R ? R[S] : unknown, P>
      : T
    : unknown;

/** A declarative step's id, as written. */
type StepIdOf<H> = H extends { readonly id: infer Id extends string } ? Id : never;

/** What a declarative step yields: a skippable step (`when`) may yield nothing. */
type StepResultOf<H, I, C, R> = (H extends { readonly when: unknown } ? undefined : never) | StepValueOf<H, I, C, R>;
type StepValueOf<H, I, C, R> = H extends { readonly tool: infer T }
  ? T extends Tool<any, infer O, any, any>
    ? O
    : unknown
  : H extends { readonly select: { readonly from: infer F; readonly expect: infer E } }
    ? SelectResult<RefValue<F, I, C, R>, E>
    : H extends { readonly compute: (...args: never[]) => infer V }
      ? H extends { readonly output: infer S extends Schema }
        ? SchemaOutput<S>
        : Awaited<V>
      : FlowValueOf<H>;

/**
 * What the steps that run chains yield (§12): a sub-chain's output,
 * an array per forEach, a union per branch, a loop's last output.
 */
type FlowValueOf<H> = H extends { readonly chain: infer C }
  ? ChainOutputOf<C>
  : H extends { readonly forEach: { readonly chain: infer C } }
    ? H extends { readonly forEach: { readonly onItemError: 'collect' } }
      ? ItemResult<ChainOutputOf<C>>[]
      : ChainOutputOf<C>[]
    : H extends { readonly branch: { readonly cases: infer Cases } }
      ? | CaseOutputOf<Cases[keyof Cases]>
        | (H extends { readonly branch: { readonly default: infer D } } ? CaseOutputOf<D> : never)
      : H extends { readonly loop: { readonly chain: infer C } }
        ? ChainOutputOf<C>
        : H extends { readonly sleep: unknown }
          ? null
          : H extends { readonly waitFor: { readonly schema: infer S extends Schema } }
            ? SchemaOutput<S>
            : unknown;

/**
 * A chain's output type, read structurally (define/chain.ts sits above this file).
 *
 * @example
 * ```ts
 * type O = ChainOutputOf<typeof shout>; // { loud: string }
 * ```
 */
export type ChainOutputOf<C> = C extends {
  readonly kind: 'chain';
  /** The chain's output builder, whose return type is the chain's output type. */
  readonly output?: (scope: never) => infer O;
}
  ? O
  : never;
/** A branch case's output: a bare chain's or a `{ chain, input }` case's chain's. */
type CaseOutputOf<K> = K extends { readonly chain: infer C } ? ChainOutputOf<C> : ChainOutputOf<K>;

/**
 * What a `forEach` with `onItemError: 'collect'` yields per item: its output, or its failure.
 *
 * @example
 * ```ts
 * for (const r of s.results.done) if (!r.ok) console.log(r.error.code);
 * ```
 */
export type ItemResult<T> = { ok: true; value: T } | { ok: false; error: ChainErrorInfo };

/** Tail-recursive, so long chains do not deepen the instantiation stack. */
type Fold<Steps, I, C, R> = Steps extends readonly [infer H, ...infer Rest] ? Fold<Rest, I, C, Next<H, I, C, R>> : R;
/** The results after step `H`. */
type Next<H, I, C, R> = R & { [K in StepIdOf<H>]: StepResultOf<H, I, C, R> };

/**
 * The results of a declarative chain's steps by id, given its input `I` and context `C`: a tool
 * step yields its tool's output, a select step an item (an array for `expect: 'all'`), a compute
 * step its (awaited) return or its `output` schema's type. Steps not written as a literal tuple
 * (or whose ids are only known as `string`) give `Record<string, any>`.
 *
 * @example
 * ```ts
 * type R = StepResults<[{ id: 'w'; tool: typeof getWeather; input: {} }], {}, {}>; // { w: { celsius: number } }
 * ```
 */
export type StepResults<Steps extends readonly unknown[], I, C> =
  Untyped<Steps> extends true ? Record<string, any> : Flat<Fold<Steps, I, C, {}>>;
/** Steps not written as a tuple, or with an id typed only as `string`, cannot be looked up by id. */
type Untyped<Steps extends readonly unknown[]> = number extends Steps['length']
  ? true
  : string extends StepIdOf<Steps[number]>
    ? true
    : false;
/** One object type instead of an intersection, for readable hovers and messages. */
type Flat<T> = T extends unknown ? { [K in keyof T]: T[K] } : never;

/**
 * A declarative chain's output without `output`: the last step's result (a skipped last step
 * leaves the result of the step before it).
 *
 * @example
 * ```ts
 * type O = LastResult<typeof steps, StepResults<typeof steps, Input, Context>>;
 * ```
 */
export type LastResult<Steps extends readonly unknown[], R> = Untyped<Steps> extends true ? unknown : Last<Steps, R>;
type Last<Steps, R> = Steps extends readonly [...infer Init, infer L]
  ? L extends { readonly id: infer Id extends keyof R }
    ? L extends { readonly when: unknown }
      ? Exclude<R[Id], undefined> | Last<Init, R>
      : R[Id]
    : unknown
  : undefined;
