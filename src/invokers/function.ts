// Tools implemented as local functions: the simplest invoker, also handy in tests.
import type { Tool, ToolInput, ToolOutput } from '../define/tool.js';
import { DefinitionError } from '../errors/definition-error.js';
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
 * const impls: ToolImplementations<[typeof getWeather]> = { get_weather: async ({ city }) => ({ celsius: city.length }) };
 * ```
 */
export type ToolImplementations<Tools extends readonly Tool[]> = {
  [T in Tools[number] as T['name']]: (input: ToolInput<T>, call: ToolCall) => ToolResultOf<T>;
};

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
export function functionInvoker<const Tools extends readonly Tool[]>(tools: Tools, functions: NoInfer<ToolImplementations<Tools>>): ToolInvoker;
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
export function functionInvoker(toolsOrFunctions: readonly Tool[] | Record<string, ToolFunction>, typed?: object): ToolInvoker {
  const functions = implementationsFor(toolsOrFunctions, typed, 'functions') as Record<string, ToolFunction>;
  if (typeof functions !== 'object' || functions === null) throw new TypeError('Expected an object of tool functions.');
  for (const [name, fn] of Object.entries(functions)) {
    if (typeof fn !== 'function') throw new TypeError(`Expected \`${name}\` to be a function.`);
  }
  if (Array.isArray(toolsOrFunctions)) {
    const missing = (toolsOrFunctions as readonly Tool[]).filter((t) => !Object.hasOwn(functions, t.name)).map((t) => t.name);
    if (missing.length > 0) throw new DefinitionError('function invoker', missing.map((name) => ({ path: `functions.${name}`, message: `No implementation for tool '${name}'.` })));
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
    if (typeof name !== 'string') throw new TypeError(`Expected an array of tools made by defineTool() before the ${what}.`);
    names.add(name);
  }
  if (typeof second !== 'object' || second === null) throw new TypeError(`Expected the ${what} object after the tools.`);
  for (const key of Object.keys(second)) {
    if (!names.has(key)) throw new TypeError(`'${key}' is not one of the tools given (${[...names].join(', ') || 'none'}).`);
  }
  return second;
}
