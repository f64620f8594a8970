// The builder at run time (builder.ts holds its types): each call adds one plain step; `.output` and
// `.build` hand the spec to defineChain.
import { defineChain, type Chain } from './chain.js';
import type { ContextOf } from './infer.js';
import { ref, type Ref, type Scope } from './ref.js';
import type { Schema, SchemaOutput } from './schema.js';
import type { ChainSpec, ComputeStep, InputMapping, Precondition, Step } from './spec.js';
import type { Tool } from './tool.js';

/**
 * What `chain()` takes: everything of a chain spec but its name, steps and output.
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
/**
 * The builder at run time: each method adds a plain step and returns a new builder; the types of
 * {@link ChainBuilder} are all the checking there is, so this side stays small.
 *
 * @example
 * ```ts
 * const c = new Builder('rename', { input }, []).tool('find', listTasks, { status: 'all' }).build();
 * ```
 */
export class Builder {
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
