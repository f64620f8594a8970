// The tools an invoker declares it serves (`ToolInvoker.serves`), from tools or their names.
import type { Tool } from '../define/tool.js';

/**
 * The names in `tools` (tools or names), checked: a `TypeError` for anything else.
 *
 * @example
 * ```ts
 * const names = servedNames([getWeather, 'send_email']); // Set { 'get_weather', 'send_email' }
 * invoker.serves = (tool) => names.has(tool);
 * ```
 */
export function servedNames(tools: readonly (Tool | string)[]): Set<string> {
  if (!Array.isArray(tools)) throw new TypeError('Expected `tools` to be an array of tools or tool names.');
  return new Set(
    tools.map((t) => {
      const name = typeof t === 'string' ? t : (t as Partial<Tool> | null)?.name;
      if (typeof name !== 'string') throw new TypeError('Expected `tools` to be an array of tools or tool names.');
      return name;
    }),
  );
}
