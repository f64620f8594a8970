// Types only: the checks of a declarative chain's refs (issue 23). `ref('contact', 'emial')` is made by
// the plain `ref`, which cannot know the chain, so `defineChain` checks the steps once they are
// inferred. Two stages, so a chain with no mistake costs the compiler little:
// 1. one assignability check of the steps against the refs that exist (each source's paths, built once
//    per type and shared by every chain that reads it), plus the few checks a relation cannot make
//    (`where` field names, `ref('item', …)` in a forEach input);
// 2. only when that fails, define/ref-errors.ts finds each wrong ref and names it where it is written.
// Stage 1 is sound (it never passes a wrong ref); what it cannot prove (bracket paths, `length`,
// paths deeper than its budget) falls through to stage 2, which is exact.
import type { PathOf } from './infer.js';
import type { Ref } from './ref.js';
import type { CheckStep, FieldsOf, FromItem, Plain, RefError, StepErrors, WhereFieldError } from './ref-errors.js';
import type { Step } from './step-kinds.js';

/**
 * The steps of a declarative chain as `defineChain` checks them, given the chain input `I`, context
 * `C` and the step results `R`: each ref's path must exist in its source (in a tool's or a
 * sub-chain's `input`, a select's `from` and matchers, a forEach's `over` and `input` — where
 * `ref('item', …)` reads the element of `over` — a loop's `input`, a branch's `on`, and any step's
 * `compensate.input`), and each `where` field in the selected items. `unknown` when all is well;
 * else, for each step, the ref or field that is wrong becomes a property the step lacks, named by
 * the message, so tsc reports it where it is written.
 *
 * @example
 * ```ts
 * type Steps = [{ id: 'a'; tool: typeof search; input: { query: Ref<any, 'input', 'q'> } }];
 * type Ok = CheckedSteps<Steps, { q: string }, {}, {}>; // unknown
 * ```
 */
export type CheckedSteps<Steps extends readonly unknown[], I, C, R> =
  // Steps not written out (the wide `Step` type, as in `const steps: Step[]`): nothing to check.
  Step<any> extends Steps[number]
    ? unknown
    : Steps extends readonly Shape<ValidRef<I, C, R>>[]
      ? [Unrelatable<Steps[number], I, C, R>] extends [never]
        ? unknown
        : Located<Steps, I, C, R>
      : Located<Steps, I, C, R>;

/** Stage 2: each step with a wrong ref must also be what {@link CheckStep} says (`unknown` if none is wrong). */
type Located<Steps extends readonly unknown[], I, C, R> = [StepErrors<Steps[number], I, C, R>] extends [never]
  ? unknown
  : {
      readonly [K in keyof Steps as K extends `${number}` ? K : never]: [StepErrors<Steps[K], I, C, R>] extends [never]
        ? unknown
        : CheckStep<Steps[K], I, C, R>;
    };

/** The paths stage 1 proves (`''`: the whole value); a deeper or bracketed path goes to stage 2. */
type ProvenPaths<T> = '' | PathOf<T>;
/** Every ref that exists in the chain: into the input, the context, or a step's result. */
type ValidRef<I, C, R> =
  | Ref<any, 'input', ProvenPaths<I>>
  | Ref<any, 'context', ProvenPaths<C>>
  | { [S in keyof R & string]: Ref<any, S, ProvenPaths<R[S]>> }[keyof R & string];

/** A value of a mapping: a valid ref, a literal, a function, or an object or array of them (not a wrong ref). */
type Val<VR> = VR | Plain | Nested<VR> | readonly Val<VR>[];
/** A nested object of a mapping; `resolve` keeps a `Ref` (which has that method) out. */
type Nested<VR> = { readonly [key: string]: Val<VR>; readonly resolve?: never };
/** A step whose refs are all in `VR`; the parts that hold no ref (tools, chains, functions) are left out. */
type Shape<VR> = {
  readonly id: string;
  readonly input?: Val<VR>;
  readonly select?: { readonly from?: Val<VR>; readonly where?: Val<VR> };
  readonly forEach?: { readonly over?: Val<VR>; readonly input?: Val<VR | Ref<any, 'item', string>> };
  readonly loop?: { readonly input?: Val<VR> };
  readonly branch?: {
    readonly on?: Val<VR>;
    readonly cases?: { readonly [name: string]: CaseShape<VR> };
    readonly default?: CaseShape<VR>;
  };
  readonly sleep?: Val<VR>;
  readonly compensate?: { readonly input?: Val<VR> };
};
/** A branch case: a chain (nothing to check: `kind` tells it), or `{ chain, input }` with its mapping's refs. */
type CaseShape<VR> = { readonly kind: 'chain' } | { readonly chain: unknown; readonly input?: Val<VR> };

/** What stage 1's relation cannot see: `where` fields the items lack, item refs a forEach's element lacks. */
type Unrelatable<H, I, C, R> = H extends { readonly select: { readonly from: infer F; readonly where: infer W } }
  ? W extends Plain
    ? never
    : WhereFields<keyof W, FromItem<F, I, C, R>>
  : H extends { readonly forEach: { readonly over: infer O; readonly input: infer M } }
    ? M extends Plain
      ? never
      : ItemRefErrors<RefsIn<M>, FromItem<O, I, C, R>>
    : never;
/** `never` when every `where` field `K` is a field of the items `X` (one check), else the messages. */
type WhereFields<K, X> = [K] extends [FieldsOf<X>] ? never : WhereFieldError<K, X>;
/** The refs in a mapping, nested objects and arrays included. */
type RefsIn<M> = unknown extends M
  ? never
  : M extends Ref<any, string, string>
    ? M
    : M extends Plain
      ? never
      : M extends readonly unknown[]
        ? RefsIn<M[number]>
        : RefsIn<M[keyof M]>;
/** The messages of the `ref('item', …)`s among refs `V` whose path the element type `X` lacks. */
type ItemRefErrors<V, X> = V extends Ref<any, 'item', string> ? RefError<V, unknown, unknown, { item: X }> : never;
