// The builder form of a chain: each call adds one step and returns a builder whose type carries it
// (tRPC's procedure builder is the model), so every ref, mapping and option is checked where it is
// written. It only assembles a spec for defineChain: same validation, same Chain, no run-time cost.
import type { Schema, SchemaInput, SchemaOutput } from './schema.js';
import type { Chain } from './chain.js';
import { Builder, type ChainOptions } from './builder-steps.js';
import type { ContextInputOf, ContextOf, MappingOf, SelectResult } from './infer.js';
import type {
  RefValue,
  AnyChain,
  ChainIn,
  ChainOut,
  EachResult,
  ForEachSpec,
  CaseSpec,
  CaseOut,
  BranchSpec,
  LoopSpec,
  ToolIn,
  NoExtra,
} from './builder-flow.js';
import type {
  RefSources,
  TypedRef,
  StepOptions,
  ComputeOptions,
  SelectSpec,
  NewId,
  Skippable,
  NextLast,
} from './builder-refs.js';
import type { Ref, Scope } from './ref.js';
import type { Tool, ToolOutput } from './tool.js';

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

/** A compute step's result: its `output` schema's type, else the awaited return. */
type Computed<O, V> = O extends { output: infer S extends Schema } ? SchemaOutput<S> : Awaited<V>;

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
