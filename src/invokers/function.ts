// Tools implemented as local functions: the simplest invoker, also handy in tests.
import type { Tool, ToolInput, ToolOutput } from '../define/tool.js';
import { DefinitionError } from '../errors/definition-error.js';
import type { JoinedText, TypeText } from '../util/type-text.js';
import type { ToolCall, ToolInvoker } from './types.js';

/** A local implementation of one tool. */
export type ToolFunction = (input: any, call: ToolCall) => unknown | Promise<unknown>;

/**
 * An in-band error result: a tool output of this shape is a failure with `code = error` (`retry_after` in seconds).
 *
 * @example
 * ```ts
 * const busy: ToolErrorResult = { status: 'error', error: 'rate_limited', retry_after: 2 };
 * ```
 */
export interface ToolErrorResult {
  status: 'error';
  error: string;
  message?: string;
  retry_after?: number;
}

/**
 * What an implementation of tool `T` returns: its output or an in-band error result, possibly async.
 *
 * @example
 * ```ts
 * const weather = async (): ToolResultOf<typeof getWeather> => ({ celsius: 21 });
 * ```
 */
export type ToolResultOf<T> = ToolOutput<T> | ToolErrorResult | Promise<ToolOutput<T> | ToolErrorResult>;

/**
 * Implementations of `Tools` by tool name: each receives the tool's parsed input and returns its output.
 *
 * @example
 * ```ts
 * const impls: ToolImplementations<[typeof getWeather]> = {
 *   get_weather: async ({ city }) => ({ celsius: city.length }),
 * };
 * ```
 */
export type ToolImplementations<Tools extends readonly Tool[]> = {
  [T in Tools[number] as T['name']]: (input: ToolInput<T>, call: ToolCall) => ToolResultOf<T>;
};

// What `functionInvoker(tools, impls)` checks `impls` against, so that each mistake is one type
// error whose first line says what is wrong. `F` is inferred from `impls` (each function's return
// type), `K` from its keys. Inferred, the check is `CheckedImplementations`: an implementation
// returning the wrong shape is told the first wrong field; a key that names no tool is told so; a
// missing tool is required. When `F` cannot be inferred (the compiler's retry after a failed
// call), `ImplementationsByKey` keeps the message of a misspelled key to one error.
type ToolNames<Tools extends readonly Tool[]> = Tools[number]['name'];
type ToolNamed<Tools extends readonly Tool[], N> = Extract<Tools[number], { name: N }>;
/** The message for a key of `impls` that names no tool. */
type NotATool<
  P,
  Tools extends readonly Tool[],
> = `'${P & string}' is not one of the tools given: ${JoinedText<ToolNames<Tools> & string>}`;
/** The first field of `A` that does not fit `O`, as a message; `never` when it fits. */
type WrongField<A, O, Path extends string> = [A] extends [O]
  ? never
  : [O] extends [readonly (infer OE)[]]
    ? [A] extends [readonly (infer AE)[]]
      ? WrongField<AE, OE, `${Path}[number]`>
      : `${Path}: expected ${TypeText<O>}`
    : [O] extends [Record<string, unknown>]
      ? [A] extends [Record<string, unknown>]
        ? WrongFields<A, O, Path>
        : `${Path extends '' ? 'the output' : Path}: expected ${TypeText<O>}`
      : `${Path}: expected ${TypeText<O>}`;
type WrongFields<A, O, Path extends string> = {
  [K in keyof O & string]: K extends keyof A
    ? WrongField<A[K], O[K], Path extends '' ? K : `${Path}.${K}`>
    : {} extends Pick<O, K>
      ? never
      : `${Path extends '' ? K : `${Path}.${K}`} is missing`;
}[keyof O & string];
/**
 * What an implementation of `T` returning `R` must return: `R` when it fits, else a
 * message naming the wrong field (`ToolResultOf<T>` while `R` is not inferred yet).
 */
type CheckedResult<R, T> = unknown extends R
  ? ToolResultOf<T>
  : Fits<Awaited<R>, T> extends true
    ? R
    : `wrong output of tool ${T extends Tool ? T['name'] : ''}: ${WrongField<Awaited<R>, ToolOutput<T>, ''>}`;
/**
 * `true` when every member of `A` is an output of `T` or an in-band error result. An error result
 * whose `status` was widened to `string` (a function without parameters is typed before its
 * context is known) counts: its literal is not known, only that it is not some other literal.
 */
type Fits<A, T> = [A] extends [never]
  ? true
  : (
        A extends unknown
          ? A extends ToolOutput<T> | ToolErrorResult
            ? true
            : A extends { status: infer S; error: string }
              ? string extends S
                ? true
                : false
              : false
          : never
      ) extends true
    ? true
    : false;
type CheckedImplementations<Tools extends readonly Tool[], F> = {
  [P in keyof F]: P extends ToolNames<Tools>
    ? (input: ToolInput<ToolNamed<Tools, P>>, call: ToolCall) => CheckedResult<F[P], ToolNamed<Tools, P>>
    : (input: any, call: ToolCall) => NotATool<P, Tools>;
} & MissingImplementations<Tools, Exclude<ToolNames<Tools>, keyof NoInfer<F>>>;
type MissingImplementations<Tools extends readonly Tool[], M> = [M] extends [never]
  ? unknown
  : { [P in M & string]: (input: ToolInput<ToolNamed<Tools, P>>, call: ToolCall) => ToolResultOf<ToolNamed<Tools, P>> };
type ImplementationsByKey<Tools extends readonly Tool[], K extends string> = {
  [P in K | ([Exclude<K, ToolNames<Tools>>] extends [never] ? ToolNames<Tools> : never)]: P extends ToolNames<Tools>
    ? (input: ToolInput<ToolNamed<Tools, P>>, call: ToolCall) => ToolResultOf<ToolNamed<Tools, P>>
    : (input: any, call: ToolCall) => NotATool<P, Tools>;
};
/** What `functionInvoker(tools, impls)` checks `impls` against (see above). */
type ImplementationsOf<Tools extends readonly Tool[], K extends string, F> = [unknown] extends [F]
  ? ImplementationsByKey<Tools, K>
  : CheckedImplementations<Tools, F>;

/**
 * An invoker that calls local functions by tool name, typed by the tools: `functions` must name
 * every one of those tools and no other, and each receives its tool's input type and must return
 * its output type (or an in-band error result). A tool left without an implementation is a type
 * error, and a `DefinitionError` naming it at run time; the invoker declares the tools it serves, so
 * a runner refuses a chain needing any other before the chain's first step.
 *
 * @example
 * ```ts
 * const invoker = functionInvoker([getWeather], {
 *   get_weather: async ({ city }) => ({ celsius: city === 'Oslo' ? 4 : 21 }),
 * });
 * ```
 */
export function functionInvoker<const Tools extends readonly Tool[], K extends string, F>(
  tools: Tools,
  functions: ImplementationsOf<NoInfer<Tools>, K, F>,
): ToolInvoker;
/**
 * An invoker that calls local functions by tool name (untyped: any name, any input). It serves
 * the tools it has a function for: a runner refuses a chain needing any other before the chain's
 * first step (a `DefinitionError`); a direct call of an unknown tool fails as `not_found`.
 *
 * @example
 * ```ts
 * const invoker = functionInvoker({
 *   get_weather: async ({ city }) => ({ celsius: city === 'Oslo' ? 4 : 21 }),
 * });
 * ```
 */
export function functionInvoker(functions: Record<string, ToolFunction>): ToolInvoker;
export function functionInvoker(
  toolsOrFunctions: readonly Tool[] | Record<string, ToolFunction>,
  typed?: object,
): ToolInvoker {
  const functions = implementationsFor(toolsOrFunctions, typed, 'functions') as Record<string, ToolFunction>;
  if (typeof functions !== 'object' || functions === null) throw new TypeError('Expected an object of tool functions.');
  for (const [name, fn] of Object.entries(functions)) {
    if (typeof fn !== 'function') throw new TypeError(`Expected \`${name}\` to be a function.`);
  }
  if (Array.isArray(toolsOrFunctions)) {
    const missing = (toolsOrFunctions as readonly Tool[])
      .filter((t) => !Object.hasOwn(functions, t.name))
      .map((t) => t.name);
    if (missing.length > 0)
      throw new DefinitionError(
        'function invoker',
        missing.map((name) => ({ path: `functions.${name}`, message: `No implementation for tool '${name}'.` })),
      );
  }
  const table = new Map(Object.entries(functions));
  const invoker: ToolInvoker = (call) => {
    const fn = table.get(call.tool);
    if (!fn) return Promise.reject(Object.assign(new Error(`No function for tool '${call.tool}'.`), { status: 404 }));
    try {
      return Promise.resolve(fn(call.input, call));
    } catch (error) {
      // Rejected a tick later, once the caller's handler is attached: a promise rejected with no
      // handler yet costs Node's unhandled-rejection bookkeeping on every failed attempt.
      return Promise.resolve(error).then(rethrow);
    }
  };
  invoker.serves = (tool) => table.has(tool);
  return invoker;
}

function rethrow(error: unknown): never {
  throw error;
}

/**
 * @internal The implementations object of a call made as `(tools, impls)` or `(impls)`; with tools, checks
 * at definition time that every key names one of them (the types do too, for TypeScript users).
 */
export function implementationsFor(first: unknown, second: unknown, what: string): unknown {
  if (!Array.isArray(first)) return first;
  const names = new Set<string>();
  for (const t of first as unknown[]) {
    const name = (t as Partial<Tool> | null)?.name;
    if (typeof name !== 'string')
      throw new TypeError(`Expected an array of tools made by defineTool() before the ${what}.`);
    names.add(name);
  }
  if (typeof second !== 'object' || second === null)
    throw new TypeError(`Expected the ${what} object after the tools.`);
  for (const key of Object.keys(second)) {
    if (!names.has(key))
      throw new TypeError(`'${key}' is not one of the tools given (${[...names].join(', ') || 'none'}).`);
  }
  return second;
}
