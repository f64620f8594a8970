// Tools implemented as local functions: the simplest invoker, also handy in tests.
import type { ToolCall, ToolInvoker } from '../run/pipeline.js';

/** A local implementation of one tool. */
export type ToolFunction = (input: any, call: ToolCall) => unknown | Promise<unknown>;

/**
 * An invoker that calls local functions by tool name. An unknown tool fails as `not_found`.
 *
 * @example
 * ```ts
 * const invoker = functionInvoker({
 *   get_weather: async ({ city }) => ({ celsius: city === 'Oslo' ? 4 : 21 }),
 * });
 * ```
 */
export function functionInvoker(functions: Record<string, ToolFunction>): ToolInvoker {
  if (typeof functions !== 'object' || functions === null) throw new TypeError('Expected an object of tool functions.');
  for (const [name, fn] of Object.entries(functions)) {
    if (typeof fn !== 'function') throw new TypeError(`Expected \`${name}\` to be a function.`);
  }
  const table = new Map(Object.entries(functions));
  return (call) => {
    const fn = table.get(call.tool);
    if (!fn) return Promise.reject(Object.assign(new Error(`No function for tool '${call.tool}'.`), { status: 404 }));
    try {
      return Promise.resolve(fn(call.input, call));
    } catch (error) {
      return Promise.reject(error);
    }
  };
}
