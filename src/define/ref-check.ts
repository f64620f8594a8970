// Types only: the checks of a declarative chain's refs (issue 23). `ref('contact', 'emial')` is made by
// the plain `ref`, which cannot know the chain, so `defineChain` checks the steps once they are
// inferred. Two stages, so a chain with no mistake costs the compiler little:
// 1. one assignability check of the steps against refs that can read the chain's sources: each ref
//    carries the shape it reads (`Needs` in define/ref.ts), so nothing per path is built; and the
//    flags the step fold (define/step-results.ts) sets where a check needs a step's own types (a
//    `where` field against the selected items, a `ref('item', …)` against the element of `over`);
// 2. only when that fails, define/ref-errors.ts finds each wrong ref and names it where it is written.
// What stage 1 cannot prove (bracket paths, values that may be null, a path typed as a union of paths,
// Object's member names) falls through to stage 2, which is exact. Stage 1 passes a wrong path only into a
// value with no fields of its own to compare (a record, `{}`, `object`) or one that is only `undefined` or
// `never` (tsc's check of all-optional types skips those), and a path typed only as `string` (a helper's:
// only its source is checked). defineChain's DefinitionError still reports the ones a schema describes.
import type { ElementOf, RefValueIn } from './infer.js';
import type { Readable, Ref } from './ref.js';
import type { CheckStep, FieldsOf, Plain, StepErrors } from './ref-errors.js';

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
  // Steps not written out (the wide `Step` type, as in `const steps: Step[]`): results by any id, nothing to check.
  string extends keyof R
    ? unknown
    : typeof badRefs extends keyof R
      ? Located<Steps, I, C, R>
      : Steps extends readonly Shape<Readable<R & { readonly input: I; readonly context: C }>>[]
        ? unknown
        : Located<Steps, I, C, R>;

/** Stage 2: each step with a wrong ref must also be what {@link CheckStep} says (`unknown` if none is wrong). */
type Located<Steps extends readonly unknown[], I, C, R> = [StepErrors<Steps[number], I, C, R>] extends [never]
  ? unknown
  : {
      readonly [K in keyof Steps as K extends `${number}` ? K : never]: [StepErrors<Steps[K], I, C, R>] extends [never]
        ? unknown
        : CheckStep<Steps[K], I, C, R>;
    };

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

declare const badRefs: unique symbol;
/** A flag in a chain's results: step `H` has a wrong ref or `where` field (stage 2 says which). */
type Flag<H> = { readonly [badRefs]: H };

/**
 * For the step fold, by the step's kind: the flag of a select step with a `where` field its items lack,
 * or of a forEach step whose input has a ref the element of `over` (or the results `R` so far) cannot
 * give; else `unknown`. Computed where the items' type is already at hand.
 *
 * @example
 * ```ts
 * type Step = { id: 'p'; select: { from: Ref<any, 'input', 'xs'>; where: { nmae: {} } } };
 * type F = StepFlags<Step, { xs: { name: string }[] }, {}, {}>['select']; // { [badRefs]: Step }
 * ```
 */
export type StepFlags<H, I, C, R> = {
  tool: unknown;
  compute: unknown;
  chain: unknown;
  branch: unknown;
  loop: unknown;
  sleep: unknown;
  waitFor: unknown;
  select: H extends { readonly select: { readonly from: infer F; readonly where: infer W } }
    ? [keyof W] extends [FieldsOf<ElementOf<RefValueIn<F, I, C, R>>>]
      ? unknown
      : Flag<H>
    : unknown;
  forEach: H extends { readonly forEach: { readonly over: infer O; readonly input: infer M } }
    ? M extends Val<
        Readable<
          Omit<R, 'item'> & { readonly input: I; readonly context: C; readonly item: ElementOf<RefValueIn<O, I, C, R>> }
        >
      >
      ? unknown
      : Flag<H>
    : unknown;
};
