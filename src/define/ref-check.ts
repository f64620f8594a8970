// Types only: the checks of a declarative chain's refs (issue 23). `ref('contact', 'emial')` is made by
// the plain `ref`, which cannot know the chain, so `defineChain` checks the steps once they are
// inferred: a wrong path or `where` field becomes a required property named by the message, and
// tsc reports it at the property holding the ref. Each ref is looked up once, through the results
// `output` already needs (no union of every path is built).
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
type Plain = string | number | boolean | bigint | symbol | null | undefined | Date | ((...args: never[]) => unknown);

/** A tool input mapping's refs checked, nested objects and arrays included. */
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
/** The fields of the items (any member of a union). */
type FieldsOf<X> = X extends unknown ? keyof X & string : never;
/** `'titel' is not a field of the item: title` → `'titel' is not a field of the selected items: title`. */
type WhereMessage<E extends string> = E extends `${infer H} of the item: ${infer F}`
  ? `${H} of the selected items: ${F}`
  : E;
type CheckMatcher<M, I, C, R> = unknown extends M
  ? unknown
  : M extends Plain
    ? unknown
    : { readonly [Op in keyof M]: CheckRef<M[Op], I, C, R> };

/** The message of a ref whose path does not exist, else `never`. */
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
/** The items a `from` ref reads (`unknown` when its path is wrong: that is reported at `from`). */
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
/** The message of a `where` field the items do not have, else `never`. */
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
 * The steps of a declarative chain as `defineChain` checks them, given the chain input `I`, context
 * `C` and the step results `R`: each ref's path must exist in its source (a tool step's `input`,
 * a select step's `from` and matchers), and each `where` field in the selected items. `unknown`
 * when all is well (nothing more to relate); else, for each step, the ref or field that is wrong
 * becomes a property the step lacks, named by the message, so tsc reports it where it is written.
 *
 * @example
 * ```ts
 * type Steps = [{ id: 'a'; tool: typeof search; input: { query: Ref<any, 'input', 'q'> } }];
 * type Ok = CheckedSteps<Steps, { q: string }, {}, {}>; // unknown
 * ```
 */
export type CheckedSteps<Steps extends readonly unknown[], I, C, R> = [StepErrors<Steps[number], I, C, R>] extends [
  never,
]
  ? unknown
  : {
      readonly [K in keyof Steps as K extends `${number}` ? K : never]: [StepErrors<Steps[K], I, C, R>] extends [never]
        ? unknown
        : CheckStep<Steps[K], I, C, R>;
    };
type StepErrors<H, I, C, R> = H extends { readonly tool: unknown; readonly input: infer M }
  ? M extends Plain
    ? never
    : MappingErrors<M, I, C, R>
  : H extends { readonly select: infer Sel }
    ? SelectErrors<Sel, I, C, R>
    : never;
type CheckStep<H, I, C, R> = H extends { readonly tool: unknown; readonly input: infer M }
  ? M extends Plain
    ? unknown
    : { readonly input: CheckMapping<M, I, C, R> }
  : H extends { readonly select: infer Sel }
    ? { readonly select: CheckSelect<Sel, I, C, R> }
    : unknown;
