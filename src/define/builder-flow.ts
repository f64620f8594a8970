// The types of the builder's control-flow steps (API.md §12): a sub-chain's input and output, a
// forEach's spec and item refs, a branch's cases, a loop's spec, and the mapping checks they share.
import type { Chain } from './chain.js';
import type { ElementOf, MappingOf, RefPath, RefValueAt, ValueAt } from './infer.js';
import type { ItemResult } from './step-results.js';
import type { Ref } from './ref.js';
import type { Tool } from './tool.js';

/** The value type a ref reads. */
export type RefValue<F> = F extends Ref<infer T, string, string> ? T : unknown;

/** Any chain, as a step that runs one takes it. */
export type AnyChain = Chain<any, any, any, any, any>;
/** What a chain's input schema accepts. */
export type ChainIn<C> = C extends Chain<any, any, any, infer In, any> ? In : never;
/** A chain's output type. */
export type ChainOut<C> = C extends Chain<any, any, infer O, any, any> ? O : never;
/** A forEach step's result: the outputs, or with `'collect'` each item's `{ ok, value } | { ok: false, error }`. */
export type EachResult<C, E> = E extends 'collect' ? ItemResult<ChainOut<C>>[] : ChainOut<C>[];

/**
 * The `item` handed to a builder forEach's `input`: `item(path)` is `ref('item', path)`, its path
 * checked against the element type `T` (no path: the element itself).
 *
 * @example
 * ```ts
 * input: (item) => ({ task_id: item('task_id') })
 * ```
 */
export type ItemRef<T> = <P extends string = ''>(
  path?: RefPath<T, P, 'item'>,
) => Ref<RefValueAt<T, P, 'item'>, 'item', P>;

/**
 * What a builder forEach's callback returns.
 *
 * @example
 * ```ts
 * .forEach('done', (ref) => ({
 *   over: ref('find', 'tasks'),
 *   chain: completeOne,
 *   input: (item) => ({ task_id: item('task_id') }),
 * }))
 * ```
 */
export interface ForEachSpec<F, C, M, E, _Ref = unknown> {
  /** A ref to an array. */
  over: F;
  /** The chain run per element. */
  chain: C;
  /**
   * The chain's input per element: literals, refs, and `item(path)` for the element's fields. TypeScript
   * cannot type `item` from `over` in the same object, so its paths and values are checked once the
   * object is known: a wrong one is an error at its field, saying what is wrong.
   */
  input: (item: LooseItemRef) => M & NoExtra<M, ChainIn<C>> & ItemChecked<M, ElementOf<RefValue<F>>, ChainIn<C>>;
  /** How many items run at once (default 1). */
  concurrency?: number;
  /**
   * `'fail'` (default) stops at the first failed item; `'collect'`
   * runs every item and yields `{ ok, value } | { ok: false, error }`.
   */
  onItemError?: E;
}

/** `item(path)` as the callback receives it; {@link ItemChecked} checks the paths against the element type. */
type LooseItemRef = <P extends string = ''>(path?: P) => Ref<any, 'item', P>;
/**
 * The item refs of a forEach input mapping checked against the element
 * `El` and the fields of `In`: a message type where one is wrong.
 */
type ItemChecked<M, El, In> = {
  [K in keyof M]: M[K] extends Ref<any, 'item', infer P extends string>
    ? ItemFieldCheck<El, P, K, K extends keyof NonNullable<In> ? NonNullable<In>[K] : unknown>
    : unknown;
};
type ItemFieldCheck<El, P extends string, K, Target> = [RefPath<El, P, 'item'>] extends [P]
  ? [ValueAt<El, P>] extends [Target]
    ? unknown
    : `item(${P extends '' ? '' : `'${P}'`}) does not fit field '${K & string}' of the chain's input`
  : RefPath<El, P, 'item'>;

/** A branch case: a chain (given the chain's input) or `{ chain, input }` with the input mapped. */
export type CaseSpec = AnyChain | { chain: AnyChain; input: Record<string, unknown> };
/** A case's output type. */
export type CaseOut<K> = K extends { chain: infer C } ? ChainOut<C> : ChainOut<K>;
/** A case checked: a bare chain must accept the chain's input `I`; a mapping must fit the case chain's input. */
type CheckedCase<K, I> = K extends { chain: infer C; input: infer M }
  ? { chain: C; input: M & MappingOf<ChainIn<C>> & NoExtra<M, ChainIn<C>> }
  : [I] extends [ChainIn<K>]
    ? K
    : 'a bare case chain is given the chain input, which its input schema does not accept: use { chain, input }';

/**
 * What a builder branch's callback returns.
 *
 * @example
 * ```ts
 * .branch('notify', (ref) => ({
 *   on: ref('input', 'channel'),
 *   cases: { email: emailChain, sms: { chain: smsChain, input: { to: ref('input', 'phone') } } },
 * }))
 * ```
 */
export interface BranchSpec<Cases, D, S, I = unknown> {
  /**
   * A ref to the case name (a number names the case written as that number),
   * or a function of the scope returning it.
   */
  on: Ref<string | number | null | undefined, string, string> | ((scope: S) => string | number);
  cases: { [K in keyof Cases]: CheckedCase<Cases[K], I> };
  /** Runs when `on` names no case. */
  default?: CheckedCase<D, I>;
}

/**
 * What a builder loop step takes.
 *
 * @example
 * ```ts
 * { chain: checkExport, input: (ref) => ({ id: ref('input', 'exportId') }), until: (out) => out.ready, max: 20 }
 * ```
 */
export interface LoopSpec<C, M, TRef> {
  chain: C;
  /** The chain's input, the same each iteration. */
  input: (ref: TRef) => M & NoExtra<M, ChainIn<C>>;
  /** True ends the loop: given the iteration's output and its number (from 1). */
  until: (output: ChainOut<C>, iteration: number) => boolean | Promise<boolean>;
  /** Required: the most iterations; `until` still false after them fails the step with `loop_limit`. */
  max: number;
  /** Wait between iterations, ms (default 0). */
  delayMs?: number;
}

/** What a tool's input schema accepts. */
export type ToolIn<T> = T extends Tool<any, any, any, infer In> ? In : never;
/**
 * Fields of a mapping that the target does not have, as `never` (nested objects too): excess
 * property checks do not reach a callback's returned object literal, so this does their job.
 */
export type NoExtra<M, In> = {
  [K in keyof M]: K extends keyof NonNullable<In>
    ? M[K] extends Ref<any, string, string> | readonly unknown[] | Leaf
      ? unknown
      : NoExtra<M[K], NonNullable<In>[K]>
    : never;
};
type Leaf = string | number | boolean | bigint | symbol | null | undefined | Date | ((...args: never[]) => unknown);
