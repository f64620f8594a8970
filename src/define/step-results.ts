// Types only: what each step of a declarative chain yields, folded over the steps into the results by
// id that `output` reads. The fold is tail-recursive (a 30-step chain stays far below the compiler's
// limits) and looks each step's kind up in a table, one lookup instead of a conditional per kind:
// this fold is most of what a declarative chain costs the compiler.
import type { ChainErrorInfo } from '../errors/categories.js';
import type { RefValueIn, SelectResult } from './infer.js';
import type { StepFlags } from './ref-check.js';
import type { Schema, SchemaOutput } from './schema.js';
import type { Tool } from './tool.js';

/** The key that names a step's kind (each step has exactly one). */
type KindKey = 'tool' | 'select' | 'compute' | 'chain' | 'forEach' | 'branch' | 'loop' | 'sleep' | 'waitFor';

/** What a declarative step yields: a skippable step (`when`) may yield nothing. */
type StepResultOf<H, I, C, R> = H extends { readonly when: unknown }
  ? undefined | KindValues<H, I, C, R>[keyof H & KindKey]
  : KindValues<H, I, C, R>[keyof H & KindKey];
/** A tool's output type; distributive, so a tool typed by a type parameter is read through its constraint. */
type ToolOutputOf<T> = T extends Tool<any, infer O, any, any> ? O : unknown;
/** What a step of each kind yields; only the member of the step's kind is ever computed. */
type KindValues<H, I, C, R> = {
  tool: ToolOutputOf<H[keyof H & 'tool']>;
  select: H extends { readonly select: { readonly from: infer F; readonly expect: infer E } }
    ? SelectResult<RefValueIn<F, I, C, R>, E>
    : unknown;
  compute: H extends { readonly output: infer S extends Schema }
    ? SchemaOutput<S>
    : H extends { readonly compute: (...args: never[]) => infer V }
      ? Awaited<V>
      : unknown;
  chain: H extends { readonly chain: infer C } ? ChainOutputOf<C> : unknown;
  forEach: H extends { readonly forEach: { readonly chain: infer C } }
    ? H extends { readonly forEach: { readonly onItemError: 'collect' } }
      ? ItemResult<ChainOutputOf<C>>[]
      : ChainOutputOf<C>[]
    : unknown;
  branch: H extends { readonly branch: { readonly cases: infer Cases } }
    ? | CaseOutputOf<Cases[keyof Cases]>
      | (H extends { readonly branch: { readonly default: infer D } } ? CaseOutputOf<D> : never)
    : unknown;
  loop: H extends { readonly loop: { readonly chain: infer C } } ? ChainOutputOf<C> : unknown;
  sleep: null;
  waitFor: H extends { readonly waitFor: { readonly schema: infer S extends Schema } } ? SchemaOutput<S> : unknown;
};

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
/**
 * The results after step `H`, with the step's flag when a check needs the types only this fold has
 * (a `where` field, an item ref: define/ref-check.ts).
 */
type Next<H, I, C, R> = R & { [K in H[keyof H & 'id'] & string]: StepResultOf<H, I, C, R> } & StepFlags<
    H,
    I,
    C,
    R
  >[keyof H & KindKey];

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
  : string extends Steps[number][keyof Steps[number] & 'id']
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
