// The builder form of a chain: each call adds one step and returns a builder whose type carries it
// (tRPC's procedure builder is the model), so every ref, mapping and option is checked where it is
// written. It only assembles a spec for defineChain: same validation, same Chain, no run-time cost.
import type { Schema, SchemaInput, SchemaOutput } from './schema.js';
import { defineChain, type Chain } from './chain.js';
import {
  type ChainSpec,
  type ComputeStep,
  type InputMapping,
  type Precondition,
  type Step,
  type StepCommon,
} from './spec.js';
import type {
  ContextInputOf,
  ContextOf,
  ElementOf,
  ItemResult,
  MappingOf,
  RefPath,
  RefValueAt,
  SelectResult,
  ValueAt,
  WhereOf,
} from './infer.js';
import { ref, type Ref, type Scope } from './ref.js';
import type { Tool, ToolOutput } from './tool.js';

/**
 * What {@link chain} takes: everything of a chain spec but its name, steps and output.
 *
 * @example
 * ```ts
 * chain('rename', {
 *   input: z.object({ match: z.string() }),
 *   context: z.object({ userId: z.string() }),
 *   timeoutMs: 7000,
 * });
 * ```
 */
export interface ChainOptions<IS extends Schema, CS extends Schema | undefined = undefined> {
  input: IS;
  /** The trusted context (authenticated user, tenant): never from the model. */
  context?: CS;
  version?: string;
  description?: string;
  keywords?: string[];
  useCases?: string[];
  /** Whole-chain deadline in ms (default 60 000). */
  timeoutMs?: number;
  /** Checked before any step runs, so they see no results. */
  preconditions?: Precondition<Scope<SchemaOutput<IS>, ContextOf<CS>, {}>>[];
}

/**
 * What a builder's `ref` can read: the chain input, the context (when declared) and the results so far.
 *
 * @example
 * ```ts
 * type S = RefSources<typeof input, undefined, { find: { tasks: Task[] } }>; // { input: …; find: { tasks: Task[] } }
 * ```
 */
export type RefSources<IS extends Schema, CS, R> = { input: SchemaOutput<IS> } & (CS extends Schema
  ? { context: SchemaOutput<CS> }
  : unknown) &
  R;

/**
 * The `ref` handed to builder callbacks: `source` is `'input'`, `'context'` or an earlier step id,
 * `path` a dot path that exists in that source's type (numeric indices for arrays); the ref's
 * value type is the type at that path. Without a path it is the whole source (path `''`): the
 * result is `NoInfer`, so the field a ref is written in cannot widen its path to `string`.
 *
 * @example
 * ```ts
 * chain('c', { input }).tool('find', listTasks, (ref) => ({ user_id: ref('input', 'userId') }));
 * ```
 */
export type TypedRef<Src> = <S extends keyof Src & string, P extends string = ''>(
  source: S,
  path?: PathArg<Src, S, P>,
) => NoInfer<Ref<SourceUnknown<S> extends true ? any : RefValueAt<Src[S], P, S>, S, P>>;
/**
 * The path parameter: the path itself when it exists, else a message naming the wrong segment and
 * the valid ones. After a wrong source (reported at the source) any path is taken: one error, not two.
 */
type PathArg<Src, S extends keyof Src & string, P extends string> =
  SourceUnknown<S> extends true ? P : RefPath<Src[S], P, S>;
/** A source argument that is not one of the keys falls back to their union: true then. */
type SourceUnknown<S, All = S> = true extends (S extends unknown ? ([All] extends [S] ? false : true) : never)
  ? true
  : false;

/**
 * Options of a builder step: the declarative step options, with the scope typed. `compensate`
 * runs after the step, so it also sees the step's own result.
 *
 * @example
 * ```ts
 * .tool('delete', deleteTask, (ref) => ({ user_id: ref('context', 'userId'), task_id: ref('target', 'task_id') }), {
 *   confirm: { prompt: (s) => `Delete '${s.results.target.title}'?` },
 * })
 * ```
 */
export interface StepOptions<S, SAfter = S> extends Omit<StepCommon<S>, 'id' | 'compensate'> {
  /** Undo this step if a later step fails. */
  compensate?: StepCommon<SAfter>['compensate'];
}

/**
 * Options of a builder compute step: the step options and an `output` schema its value is checked against.
 *
 * @example
 * ```ts
 * .compute('total', (s) => s.results.find.tasks.length, { output: z.number().int() })
 * ```
 */
export interface ComputeOptions<S> extends StepOptions<S> {
  /** Checks (and parses) the computed value; the step's result then has the schema's type. */
  output?: Schema;
}

/**
 * What a builder select step's callback returns: an item of `from` is picked by `where`.
 *
 * @example
 * ```ts
 * .select('target', (ref) => ({
 *   from: ref('find', 'tasks'),
 *   where: { title: { contains: ref('input', 'match') } },
 *   expect: 'one',
 * }))
 * ```
 */
export interface SelectSpec<F, E, S> {
  /** A ref to an array. */
  from: F;
  /**
   * Field matchers (checked against the items' fields), or a predicate over each item. TypeScript
   * cannot infer a predicate's `item` from `from` in the same object: annotate it (`(item: Task) =>`),
   * and the annotation is checked against the items.
   */
  where?: WhereOf<ElementOf<RefValue<F>>> | ((item: ElementOf<RefValue<F>>, scope: S) => boolean);
  /** `'one'` fails with `ambiguous` when several match; `'first'` takes the first; `'all'` keeps every match. */
  expect: E;
}

/** The value type of a ref. */
type RefValue<F> = F extends Ref<infer T, string, string> ? T : unknown;
/** A new step id, or a readable error: not reserved, not used before. */
type NewId<Id extends string, R> = Id extends 'input' | 'context'
  ? `'${Id}' is reserved for ref sources`
  : Id extends keyof R
    ? `step id '${Id}' is already used`
    : Id;
/** A step with `when` may be skipped, leaving no result. */
type Skippable<O, V> = O extends { when: unknown } ? V | undefined : V;
/** The last result after adding a step: a skipped last step leaves the one before. */
type NextLast<O, V, L> = O extends { when: unknown } ? V | L : V;

/**
 * A chain under construction (from {@link chain}). `R` holds the results of the steps added so far
 * by id, `L` the last step's result. Each method returns a new builder; `.output(...)` or
 * `.build()` makes the {@link Chain}.
 *
 * @example
 * ```ts
 * const c = chain('weather', { input: z.object({ city: z.string() }) })
 *   .tool('w', getWeather, (ref) => ({ city: ref('input', 'city') }))
 *   .build();
 * ```
 */
export interface ChainBuilder<IS extends Schema, CS extends Schema | undefined, R, L> {
  /**
   * Adds a tool step. `input` receives a typed `ref` and returns the tool's input: each field a
   * literal of its type or a ref to a value of its type.
   *
   * @example
   * ```ts
   * .tool('find', listTasks, (ref) => ({ user_id: ref('context', 'userId'), status: 'all' }))
   * ```
   */
  tool<
    Id extends string,
    T extends Tool,
    const M extends MappingOf<ToolIn<T>>,
    O extends StepOptions<
      Scope<SchemaOutput<IS>, ContextOf<CS>, R>,
      Scope<SchemaOutput<IS>, ContextOf<CS>, R & { [K in Id]: ToolOutput<T> }>
    >,
  >(
    id: NewId<Id, R>,
    tool: T,
    input: (ref: TypedRef<RefSources<IS, CS, R>>) => M & NoExtra<M, ToolIn<T>>,
    options?: O,
  ): ChainBuilder<IS, CS, R & { [K in Id]: Skippable<O, ToolOutput<T>> }, NextLast<O, ToolOutput<T>, L>>;

  /**
   * Adds a select step: picks items of an earlier array. Its result is the item (`'one'`,
   * `'first'`) or an array of items (`'all'`).
   *
   * @example
   * ```ts
   * .select('target', (ref) => ({
   *   from: ref('find', 'tasks'),
   *   where: { title: { contains: ref('input', 'match') } },
   *   expect: 'one',
   * }))
   * ```
   */
  select<
    Id extends string,
    F extends Ref<readonly any[] | null | undefined, string, string>,
    E extends 'one' | 'first' | 'all',
    O extends StepOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>>,
  >(
    id: NewId<Id, R>,
    select: (ref: TypedRef<RefSources<IS, CS, R>>) => SelectSpec<F, E, Scope<SchemaOutput<IS>, ContextOf<CS>, R>>,
    options?: O,
  ): ChainBuilder<
    IS,
    CS,
    R & { [K in Id]: Skippable<O, SelectResult<RefValue<F>, E>> },
    NextLast<O, SelectResult<RefValue<F>, E>, L>
  >;

  /**
   * Adds a compute step: a pure local function of the scope. Its result is the (awaited) return,
   * or the type of `options.output` when given.
   *
   * @example
   * ```ts
   * .compute('count', (s) => s.results.find.tasks.length)
   * ```
   */
  compute<Id extends string, V, O extends ComputeOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>>>(
    id: NewId<Id, R>,
    compute: (scope: Scope<SchemaOutput<IS>, ContextOf<CS>, R>) => V,
    options?: O,
  ): ChainBuilder<IS, CS, R & { [K in Id]: Skippable<O, Computed<O, V>> }, NextLast<O, Computed<O, V>, L>>;

  /**
   * Adds a sub-chain step: `sub` runs as one step (its steps nest under this one in traces and
   * events); `input` maps the sub-chain's input like a tool's. Its result is the sub-chain's output.
   *
   * @example
   * ```ts
   * .chain('audit', auditChain, (ref) => ({ count: ref('done', 'length') }))
   * ```
   */
  chain<
    Id extends string,
    C extends AnyChain,
    const M extends MappingOf<ChainIn<C>>,
    O extends StepOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>>,
  >(
    id: NewId<Id, R>,
    sub: C,
    input: (ref: TypedRef<RefSources<IS, CS, R>>) => M & NoExtra<M, ChainIn<C>>,
    options?: O,
  ): ChainBuilder<IS, CS, R & { [K in Id]: Skippable<O, ChainOut<C>> }, NextLast<O, ChainOut<C>, L>>;

  /**
   * Adds a forEach step: `chain` runs once per element of `over`, at most `concurrency` at once
   * (default 1). `input` maps each run's input, `item(path)` reading the element (checked against
   * its type). Its result is the array of outputs; with `onItemError: 'collect'`, of
   * `{ ok: true, value } | { ok: false, error }`.
   *
   * @example
   * ```ts
   * .forEach('done', (ref) => ({
   *   over: ref('find', 'tasks'),
   *   chain: completeOne,
   *   input: (item) => ({ task_id: item('task_id') }),
   *   concurrency: 4,
   * }))
   * ```
   */
  forEach<
    Id extends string,
    F extends Ref<readonly any[] | null | undefined, string, string>,
    C extends AnyChain,
    const M extends MappingOf<ChainIn<C>>,
    E extends 'fail' | 'collect' = 'fail',
    O extends StepOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>> = {},
  >(
    id: NewId<Id, R>,
    spec: (ref: TypedRef<RefSources<IS, CS, R>>) => ForEachSpec<F, C, M, E, TypedRef<RefSources<IS, CS, R>>>,
    options?: O,
  ): ChainBuilder<IS, CS, R & { [K in Id]: Skippable<O, EachResult<C, E>> }, NextLast<O, EachResult<C, E>, L>>;

  /**
   * Adds a branch step: the case named by `on` runs (a chain given this chain's input, or
   * `{ chain, input }`), else `default`; no such case and no default fails `invalid_input`/`no_branch`.
   * Its result is the union of the cases' outputs.
   *
   * @example
   * ```ts
   * .branch('notify', (ref) => ({ on: ref('input', 'channel'), cases: { email: emailChain, sms: smsChain } }))
   * ```
   */
  branch<
    Id extends string,
    const Cases extends Record<string, CaseSpec>,
    D extends CaseSpec = never,
    O extends StepOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>> = {},
  >(
    id: NewId<Id, R>,
    spec: (
      ref: TypedRef<RefSources<IS, CS, R>>,
    ) => BranchSpec<Cases, D, Scope<SchemaOutput<IS>, ContextOf<CS>, R>, SchemaOutput<IS>>,
    options?: O,
  ): ChainBuilder<
    IS,
    CS,
    R & { [K in Id]: Skippable<O, CaseOut<Cases[keyof Cases]> | CaseOut<D>> },
    NextLast<O, CaseOut<Cases[keyof Cases]> | CaseOut<D>, L>
  >;

  /**
   * Adds a loop step: `chain` runs until `until(output, iteration)` holds, at most `max` times
   * (required; beyond it the step fails `loop_limit`), `delayMs` apart. Its result is the last output.
   *
   * @example
   * ```ts
   * .loop('poll', {
   *   chain: checkExport,
   *   input: (ref) => ({ id: ref('input', 'exportId') }),
   *   until: (out) => out.ready,
   *   max: 20,
   *   delayMs: 2_000,
   * })
   * ```
   */
  loop<
    Id extends string,
    C extends AnyChain,
    const M extends MappingOf<ChainIn<C>>,
    O extends StepOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>> = {},
  >(
    id: NewId<Id, R>,
    spec: LoopSpec<C, M, TypedRef<RefSources<IS, CS, R>>>,
    options?: O,
  ): ChainBuilder<IS, CS, R & { [K in Id]: Skippable<O, ChainOut<C>> }, NextLast<O, ChainOut<C>, L>>;

  /**
   * Adds a sleep step: waits `ms` (a number, or `(ref) => ref(…)` naming a number; from 0 to a
   * year). Under 1 s, or without a run store, it waits in place within the run's deadline; a durable
   * run parks `waiting` (`run()` resolves at once; inside a sub-chain, the whole run) and any
   * runner's recovery wakes it. Its result is `null`.
   *
   * @example
   * ```ts
   * .sleep('cool_down', 60_000)
   * .sleep('backoff', (ref) => ref('input', 'delayMs'))
   * ```
   */
  sleep<Id extends string, O extends StepOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>> = {}>(
    id: NewId<Id, R>,
    ms: number | ((ref: TypedRef<RefSources<IS, CS, R>>) => number | Ref<number, string, string>),
    options?: O,
  ): ChainBuilder<IS, CS, R & { [K in Id]: Skippable<O, null> }, NextLast<O, null, L>>;

  /**
   * Adds a waitFor step: a durable run parks `waiting` until `runner.signal(runId, signal, payload)`
   * brings a payload `schema` accepts (the step's result, typed by it); past `timeoutMs` the run
   * fails `timeout`/`wait_timeout`. Needs a run store.
   *
   * @example
   * ```ts
   * .waitFor('reviewed', { signal: 'review', schema: z.object({ ok: z.boolean() }), timeoutMs: 86_400_000 })
   * ```
   */
  waitFor<Id extends string, PS extends Schema, O extends StepOptions<Scope<SchemaOutput<IS>, ContextOf<CS>, R>> = {}>(
    id: NewId<Id, R>,
    spec: { signal: string; schema: PS; timeoutMs?: number },
    options?: O,
  ): ChainBuilder<IS, CS, R & { [K in Id]: Skippable<O, SchemaOutput<PS>> }, NextLast<O, SchemaOutput<PS>, L>>;

  /**
   * Finishes the chain with an output built from the typed results.
   *
   * @example
   * ```ts
   * .output((s) => ({ celsius: s.results.w.celsius }))
   * ```
   */
  output<O>(
    output: (scope: Scope<SchemaOutput<IS>, ContextOf<CS>, R>) => O,
  ): Chain<SchemaOutput<IS>, ContextOf<CS>, O, SchemaInput<IS>, ContextInputOf<CS>>;

  /**
   * Finishes the chain; its output is the last step's result.
   *
   * @example
   * ```ts
   * const c = chain('one', { input }).tool('w', getWeather, (ref) => ({ city: ref('input', 'city') })).build();
   * ```
   */
  build(): Chain<SchemaOutput<IS>, ContextOf<CS>, L, SchemaInput<IS>, ContextInputOf<CS>>;
}

/** Any chain, as a step that runs one takes it. */
type AnyChain = Chain<any, any, any, any, any>;
/** What a chain's input schema accepts. */
type ChainIn<C> = C extends Chain<any, any, any, infer In, any> ? In : never;
/** A chain's output type. */
type ChainOut<C> = C extends Chain<any, any, infer O, any, any> ? O : never;
/** A forEach step's result: the outputs, or with `'collect'` each item's `{ ok, value } | { ok: false, error }`. */
type EachResult<C, E> = E extends 'collect' ? ItemResult<ChainOut<C>>[] : ChainOut<C>[];

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
type CaseSpec = AnyChain | { chain: AnyChain; input: Record<string, unknown> };
/** A case's output type. */
type CaseOut<K> = K extends { chain: infer C } ? ChainOut<C> : ChainOut<K>;
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
  /** A ref to the case name, or a function of the scope returning it. */
  on: Ref<string | null | undefined, string, string> | ((scope: S) => string);
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
type ToolIn<T> = T extends Tool<any, any, any, infer In> ? In : never;
/**
 * Fields of a mapping that the target does not have, as `never` (nested objects too): excess
 * property checks do not reach a callback's returned object literal, so this does their job.
 */
type NoExtra<M, In> = {
  [K in keyof M]: K extends keyof NonNullable<In>
    ? M[K] extends Ref<any, string, string> | readonly unknown[] | Leaf
      ? unknown
      : NoExtra<M[K], NonNullable<In>[K]>
    : never;
};
type Leaf = string | number | boolean | bigint | symbol | null | undefined | Date | ((...args: never[]) => unknown);

/** A compute step's result: its `output` schema's type, else the awaited return. */
type Computed<O, V> = O extends { output: infer S extends Schema } ? SchemaOutput<S> : Awaited<V>;

const STEP_KEYS = [
  'id',
  'tool',
  'input',
  'select',
  'compute',
  'chain',
  'forEach',
  'branch',
  'loop',
  'sleep',
  'waitFor',
] as const;
/** `item(path)` in a builder forEach's input: `ref('item', path)`. */
const itemRef = (path = ''): Ref => ref('item', path);

/** Step options as given; a JavaScript caller's stray step key would silently replace the step's own. */
function optionsOf(options: unknown, id: unknown): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`Expected the options of step ${JSON.stringify(id)} to be an object.`);
  const clash = STEP_KEYS.find((k) => Object.hasOwn(options, k));
  if (clash)
    throw new TypeError(
      `Step ${JSON.stringify(id)}: \`${clash}\` is not a step option; it is the builder method's own argument.`,
    );
  return options as Record<string, unknown>;
}

/** Runs at definition time only: the steps it assembles are the declarative ones. */
class Builder {
  constructor(
    private readonly name: string,
    private readonly options: ChainOptions<Schema, Schema | undefined>,
    private readonly steps: readonly Step[],
  ) {}

  private add(step: Step): Builder {
    return new Builder(this.name, this.options, [...this.steps, step]);
  }

  tool(id: string, tool: Tool, input: unknown, options?: unknown): Builder {
    // Key order as a declarative step is usually written ({ id, tool, input, ...options }): same fingerprint.
    const mapping =
      typeof input === 'function' ? (input as (r: typeof ref) => InputMapping)(ref) : (input as InputMapping);
    return this.add({ id, tool, input: mapping, ...optionsOf(options, id) } as Step);
  }

  select(id: string, select: unknown, options?: unknown): Builder {
    const spec = typeof select === 'function' ? (select as (r: typeof ref) => unknown)(ref) : select;
    return this.add({ id, select: spec, ...optionsOf(options, id) } as Step);
  }

  compute(id: string, compute: ComputeStep['compute'], options?: unknown): Builder {
    return this.add({ id, compute, ...optionsOf(options, id) } as Step);
  }

  chain(id: string, sub: Chain, input: unknown, options?: unknown): Builder {
    const mapping = typeof input === 'function' ? (input as (r: typeof ref) => InputMapping)(ref) : input;
    return this.add({ id, chain: sub, input: mapping, ...optionsOf(options, id) } as Step);
  }

  forEach(id: string, spec: unknown, options?: unknown): Builder {
    const made = (typeof spec === 'function' ? (spec as (r: typeof ref) => unknown)(ref) : spec) as
      Record<string, unknown> | undefined;
    // The item mapping is made here, once: `item(path)` is ref('item', path), as in the declarative form.
    const forEach =
      made && typeof made.input === 'function'
        ? { ...made, input: (made.input as (item: typeof itemRef) => unknown)(itemRef) }
        : made;
    return this.add({ id, forEach, ...optionsOf(options, id) } as Step);
  }

  branch(id: string, spec: unknown, options?: unknown): Builder {
    const branch = typeof spec === 'function' ? (spec as (r: typeof ref) => unknown)(ref) : spec;
    return this.add({ id, branch, ...optionsOf(options, id) } as Step);
  }

  loop(id: string, spec: unknown, options?: unknown): Builder {
    const made = spec as Record<string, unknown> | undefined;
    const loop =
      made && typeof made.input === 'function'
        ? { ...made, input: (made.input as (r: typeof ref) => unknown)(ref) }
        : made;
    return this.add({ id, loop, ...optionsOf(options, id) } as Step);
  }

  sleep(id: string, ms: unknown, options?: unknown): Builder {
    const sleep = typeof ms === 'function' ? (ms as (r: typeof ref) => unknown)(ref) : ms;
    return this.add({ id, sleep, ...optionsOf(options, id) } as Step);
  }

  waitFor(id: string, spec: unknown, options?: unknown): Builder {
    return this.add({ id, waitFor: spec, ...optionsOf(options, id) } as Step);
  }

  output(output: (scope: Scope) => unknown): Chain {
    return defineChain({ ...this.options, name: this.name, steps: this.steps, output } as ChainSpec<
      Schema,
      Schema | undefined,
      unknown
    >);
  }

  build(): Chain {
    return defineChain({ ...this.options, name: this.name, steps: this.steps } as ChainSpec<
      Schema,
      Schema | undefined,
      unknown
    >);
  }
}

/**
 * Starts a chain in the builder form: `.tool`, `.select` and `.compute` add steps, `.output` or
 * `.build` finishes it. Every `ref` is checked where it is written (its source must be `'input'`,
 * `'context'` or an earlier step, its path must exist), every mapping against the tool's input,
 * and step options see the results so far. The chain made is the one {@link defineChain} makes
 * from the same steps (same validation, same fingerprint).
 *
 * @example
 * ```ts
 * const findAndDelete = chain('find_and_delete', {
 *   input: z.object({ match: z.string().min(1) }),
 *   context: z.object({ userId: z.uuid() }),
 * })
 *   .tool('find', listTasks, (ref) => ({ user_id: ref('context', 'userId'), status: 'all' }))
 *   .select('target', (ref) => ({
 *     from: ref('find', 'tasks'),
 *     where: { title: { contains: ref('input', 'match') } },
 *     expect: 'one',
 *   }))
 *   .tool('delete', deleteTask, (ref) => ({ user_id: ref('context', 'userId'), task_id: ref('target', 'task_id') }), {
 *     confirm: { prompt: (s) => `Delete '${s.results.target.title}'?` },
 *   })
 *   .output((s) => ({ deleted: s.results.delete.deleted, title: s.results.target.title }));
 * ```
 */
export function chain<IS extends Schema, CS extends Schema | undefined = undefined>(
  name: string,
  options: ChainOptions<IS, CS>,
): ChainBuilder<IS, CS, {}, undefined> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('Expected chain options { input, context?, … } after the name.');
  return new Builder(name, options, []) as unknown as ChainBuilder<IS, CS, {}, undefined>;
}
