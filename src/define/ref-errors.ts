// Types only: where a declarative chain's wrong refs are and what they say (issue 23). Built only once
// define/ref-check.ts has found a chain with a wrong ref: for each step, the ref or `where` field that is
// wrong becomes a required property named by the message, and tsc reports it at the property holding it.
// Each ref is looked up once, through the results `output` already needs (no union of every path is built).
import type { ElementOf, RefPath, ValueAt } from './infer.js';
import type { Ref } from './ref.js';

/** The property a ref with a wrong path lacks: its key is the message. */
declare const refPathError: unique symbol;

/**
 * What a ref whose path does not exist must also be: an object with the message as its only
 * (missing) property, so tsc's first line names the wrong segment and the valid ones.
 */
type PathError<M extends string> = { readonly [refPathError]: M };

/**
 * The value type a source names: the input, the context, or a step's
 * result (`any` for an unknown step: `defineChain` reports it).
 */
type SourceValue<S extends string, I, C, R> = S extends 'input'
  ? I
  : S extends 'context'
    ? C
    : S extends keyof R
      ? R[S]
      : any;

/** The results as a `forEach` input mapping sees them: `item` names the current element `X`. */
type WithItem<R, X> = Omit<R, 'item'> & { readonly item: X };

/** `unknown` (anything goes) unless `V` is a ref whose path does not exist in its source. */
type CheckRef<V, I, C, R> =
  V extends Ref<any, infer S, infer P>
    ? RefPath<SourceValue<S, I, C, R>, P, S> extends infer E extends string
      ? [E] extends [P]
        ? unknown
        : PathError<E>
      : unknown
    : unknown;

/** Leaves a mapping holds: nothing to walk into. */
export type Plain =
  string | number | boolean | bigint | symbol | null | undefined | Date | ((...args: never[]) => unknown);

/** A mapping's refs checked, nested objects and arrays included. */
type CheckMapping<M, I, C, R> = unknown extends M
  ? unknown
  : M extends Ref<any, string, string>
    ? CheckRef<M, I, C, R>
    : M extends Plain
      ? unknown
      : { readonly [K in keyof M]: CheckMapping<M[K], I, C, R> };

/**
 * A select step's `from` and `where`: the path of `from`, each
 * `where` field against the items' fields, and the refs in matchers.
 */
type CheckSelect<Sel, I, C, R> = Sel extends { readonly from: infer F }
  ? { readonly from: CheckRef<F, I, C, R> } & (Sel extends { readonly where: infer W }
      ? W extends Plain
        ? unknown
        : { readonly where: CheckWhere<W, FromItem<F, I, C, R>, I, C, R> }
      : unknown)
  : unknown;
type CheckWhere<W, X, I, C, R> = {
  readonly [K in keyof W]: K extends string
    ? unknown extends X
      ? CheckMatcher<W[K], I, C, R>
      : [X] extends [never]
        ? CheckMatcher<W[K], I, C, R>
        : string extends K
          ? CheckMatcher<W[K], I, C, R>
          : K extends FieldsOf<X>
            ? CheckMatcher<W[K], I, C, R>
            : PathError<RefPath<X, K, 'item'> extends infer E extends string ? WhereMessage<E> : never>
    : unknown;
};
/**
 * The fields of the items (any member of a union).
 *
 * @example
 * ```ts
 * type F = FieldsOf<{ a: 1 } | { b: 2 }>; // 'a' | 'b'
 * ```
 */
export type FieldsOf<X> = X extends unknown ? keyof X & string : never;
/** `'titel' is not a field of the item: title` → `'titel' is not a field of the selected items: title`. */
type WhereMessage<E extends string> = E extends `${infer H} of the item: ${infer F}`
  ? `${H} of the selected items: ${F}`
  : E;
type CheckMatcher<M, I, C, R> = unknown extends M
  ? unknown
  : M extends Plain
    ? unknown
    : { readonly [Op in keyof M]: CheckRef<M[Op], I, C, R> };

/** A forEach step's `over` path, and its input mapping's refs (`ref('item', …)` against the element type). */
type CheckForEach<F, I, C, R> = F extends { readonly over: infer O }
  ? { readonly over: CheckRef<O, I, C, R> } & (F extends { readonly input: infer M }
      ? M extends Plain
        ? unknown
        : { readonly input: CheckMapping<M, I, C, WithItem<R, FromItem<O, I, C, R>>> }
      : unknown)
  : unknown;

/**
 * The message of a ref whose path does not exist, else `never`.
 *
 * @example
 * ```ts
 * type E = RefError<Ref<any, 'input', 'nmae'>, { name: string }, {}, {}>; // "'nmae' is not a field of the input: name"
 * ```
 */
type RefError<V, I, C, R> =
  V extends Ref<any, infer S, infer P>
    ? RefPath<SourceValue<S, I, C, R>, P, S> extends infer E extends string
      ? [E] extends [P]
        ? never
        : E
      : never
    : never;
/**
 * The messages of a mapping's wrong refs (`never` when none), nested objects and arrays included.
 * Distributes over the union of the values (no mapped type per mapping).
 */
type MappingErrors<M, I, C, R> = unknown extends M
  ? never
  : M extends Ref<any, string, string>
    ? RefError<M, I, C, R>
    : M extends Plain
      ? never
      : M extends readonly unknown[]
        ? MappingErrors<M[number], I, C, R>
        : MappingErrors<M[keyof M], I, C, R>;
/** The messages of a select step's wrong `from` path, `where` fields and matcher refs. */
type SelectErrors<Sel, I, C, R> = Sel extends { readonly from: infer F }
  ? | RefError<F, I, C, R>
    | (Sel extends { readonly where: infer W }
        ? W extends Plain
          ? never
          : WhereErrors<W, FromItem<F, I, C, R>, I, C, R>
        : never)
  : never;
/** The messages of a forEach step's wrong `over` path and input refs. */
type ForEachErrors<F, I, C, R> = F extends { readonly over: infer O }
  ? | RefError<O, I, C, R>
    | (F extends { readonly input: infer M }
        ? M extends Plain
          ? never
          : MappingErrors<M, I, C, WithItem<R, FromItem<O, I, C, R>>>
        : never)
  : never;
/**
 * The items a `from` or `over` ref reads (`unknown` when its path is wrong: that is reported there).
 *
 * @example
 * ```ts
 * type X = FromItem<Ref<any, 'input', 'tasks'>, { tasks: { title: string }[] }, {}, {}>; // { title: string }
 * ```
 */
type FromItem<F, I, C, R> =
  F extends Ref<any, infer S, infer P> ? ElementOf<ValueAt<SourceValue<S, I, C, R>, P>> : unknown;
type WhereErrors<W, X, I, C, R> = {
  [K in keyof W]-?:
    | WhereFieldError<K, X>
    | (unknown extends W[K]
        ? never
        : W[K] extends Plain
          ? never
          : { [Op in keyof W[K]]-?: RefError<W[K][Op], I, C, R> }[keyof W[K]]);
}[keyof W];
/**
 * The message of a `where` field `K` the items `X` do not have, else `never`.
 *
 * @example
 * ```ts
 * type E = WhereFieldError<'titel', { title: string }>; // "'titel' is not a field of the selected items: title"
 * ```
 */
type WhereFieldError<K, X> = unknown extends X
  ? never
  : [X] extends [never]
    ? never
    : K extends string
      ? string extends K
        ? never
        : K extends FieldsOf<X>
          ? never
          : WhereMessage<RefPath<X, K, 'item'>>
      : never;

/**
 * The messages of step `H`'s wrong refs: its kind's (a tool's or a sub-chain's `input`, a select's
 * `from` and `where`, a forEach's `over` and `input`, a loop's `input`, a branch's `on`) and its
 * `compensate` input's.
 */
export type StepErrors<H, I, C, R> =
  | KindErrors<H, I, C, R>
  | (H extends { readonly compensate: { readonly input: infer M } }
      ? M extends Plain
        ? never
        : MappingErrors<M, I, C, R>
      : never);
type KindErrors<H, I, C, R> = H extends { readonly input: infer M }
  ? M extends Plain
    ? never
    : MappingErrors<M, I, C, R>
  : H extends { readonly select: infer Sel }
    ? SelectErrors<Sel, I, C, R>
    : H extends { readonly forEach: infer F }
      ? ForEachErrors<F, I, C, R>
      : H extends { readonly loop: { readonly input: infer M } }
        ? M extends Plain
          ? never
          : MappingErrors<M, I, C, R>
        : H extends { readonly branch: infer B }
          ? BranchErrors<B, I, C, R>
          : H extends { readonly sleep: infer O }
            ? RefError<O, I, C, R>
            : never;
/** A branch's wrong refs: its `on`, and the input mapping of each case (and the default) written `{ chain, input }`. */
type BranchErrors<B, I, C, R> =
  | (B extends { readonly on: infer O } ? RefError<O, I, C, R> : never)
  | (B extends { readonly cases: infer Cs } ? { [K in keyof Cs]-?: CaseErrors<Cs[K], I, C, R> }[keyof Cs] : never)
  | (B extends { readonly default: infer D } ? CaseErrors<D, I, C, R> : never);
type CaseErrors<K, I, C, R> = K extends { readonly chain: unknown; readonly input: infer M }
  ? M extends Plain
    ? never
    : MappingErrors<M, I, C, R>
  : never;

/** What step `H` must also be when it has a wrong ref: the properties that hold one, typed by the message. */
export type CheckStep<H, I, C, R> = KindCheck<H, I, C, R> &
  (H extends { readonly compensate: { readonly input: infer M } }
    ? M extends Plain
      ? unknown
      : { readonly compensate: { readonly input: CheckMapping<M, I, C, R> } }
    : unknown);
type KindCheck<H, I, C, R> = H extends { readonly input: infer M }
  ? M extends Plain
    ? unknown
    : { readonly input: CheckMapping<M, I, C, R> }
  : H extends { readonly select: infer Sel }
    ? { readonly select: CheckSelect<Sel, I, C, R> }
    : H extends { readonly forEach: infer F }
      ? { readonly forEach: CheckForEach<F, I, C, R> }
      : H extends { readonly loop: { readonly input: infer M } }
        ? M extends Plain
          ? unknown
          : { readonly loop: { readonly input: CheckMapping<M, I, C, R> } }
        : H extends { readonly branch: infer B }
          ? { readonly branch: CheckBranch<B, I, C, R> }
          : H extends { readonly sleep: infer O }
            ? { readonly sleep: CheckRef<O, I, C, R> }
            : unknown;
/** A branch with a wrong ref: its `on`, and the input mapping of each case written `{ chain, input }`. */
type CheckBranch<B, I, C, R> = (B extends { readonly on: infer O } ? { readonly on: CheckRef<O, I, C, R> } : unknown) &
  (B extends { readonly cases: infer Cs }
    ? { readonly cases: { [K in keyof Cs]: CheckCase<Cs[K], I, C, R> } }
    : unknown) &
  (B extends { readonly default: infer D } ? { readonly default: CheckCase<D, I, C, R> } : unknown);
type CheckCase<K, I, C, R> = K extends { readonly chain: unknown; readonly input: infer M }
  ? M extends Plain
    ? unknown
    : { readonly input: CheckMapping<M, I, C, R> }
  : unknown;
