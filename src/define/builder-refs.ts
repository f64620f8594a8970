// The builder's typed refs and step options: what `ref` can read (`RefSources`, `TypedRef`, its path
// checked where it is written), the options a step takes, a select's spec, and the id rules.
import type { Schema, SchemaOutput } from './schema.js';
import type { StepCommon } from './spec.js';
import type { ElementOf, RefPath, RefValueAt, WhereOf } from './infer.js';
import type { Ref } from './ref.js';
import type { RefValue } from './builder-flow.js';

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
/** A new step id, or a readable error: not reserved, not used before. */
export type NewId<Id extends string, R> = Id extends 'input' | 'context'
  ? `'${Id}' is reserved for ref sources`
  : Id extends keyof R
    ? `step id '${Id}' is already used`
    : Id;
/** A step with `when` may be skipped, leaving no result. */
export type Skippable<O, V> = O extends { when: unknown } ? V | undefined : V;
/** The last result after adding a step: a skipped last step leaves the one before. */
export type NextLast<O, V, L> = O extends { when: unknown } ? V | L : V;
