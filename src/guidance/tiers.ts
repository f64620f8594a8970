// Tool tiers: offer a model only the tools a task's complexity needs, and escalate when it asks for more.
import { schemaToJSONSchema } from '../define/schema.js';
import type { Tool } from '../define/tool.js';
import { DefinitionError } from '../errors/definition-error.js';
import { classifyComplexity, TIER_LEVELS, type TierLevel } from './intent.js';

/** Which tools each tier offers: tool names, or `'all'`. */
export type TierSpec = Partial<Record<TierLevel, readonly string[] | 'all'>>;

/** An LLM function definition. */
export type FunctionDefinition =
  | { name: string; description: string; parameters: Record<string, unknown> }
  | { name: string; description: string; input_schema: Record<string, unknown> };

/** Tools grouped by tier. */
export interface ToolRegistry {
  readonly tools: readonly Tool[];
  /** The tools of a tier. */
  forComplexity(level: TierLevel): Tool[];
  /**
   * The tools an intent needs: a tier given as `{ complexity }`, or a message whose tier the
   * registry's classifier decides ({@link classifyComplexity} unless `classify` was given).
   */
  forIntent(intent: { complexity: TierLevel } | string | undefined): Tool[];
  /** Function definitions of a tier's tools (`'openai'`: `parameters`, `'anthropic'`: `input_schema`). */
  toJSONSchema(level: TierLevel, options?: { format?: 'openai' | 'anthropic' }): FunctionDefinition[];
  /** Rough prompt size of a tier's definitions (4 characters a token). */
  estimateTokens(level: TierLevel): number;
  /** The lowest tier, from `from` upwards, that offers `tool`; `undefined` if none. */
  tierFor(tool: string, from?: TierLevel): TierLevel | undefined;
}

function checkLevel(level: unknown): asserts level is TierLevel {
  if (!TIER_LEVELS.includes(level as TierLevel)) {
    throw new DefinitionError('tier level', [
      { path: 'level', message: `Expected one of ${TIER_LEVELS.join(', ')}, got ${JSON.stringify(level)}.` },
    ]);
  }
}

/** Options of {@link createToolRegistry}. */
export interface ToolRegistryOptions {
  /** Which tools each tier offers. */
  tiers?: TierSpec;
  /** The tier a message needs, for `forIntent(message)`. Default {@link classifyComplexity}. */
  classify?: (message: string | undefined) => TierLevel;
}

/**
 * Groups tools into tiers. Unknown tool names are a {@link DefinitionError}; a tier not given
 * offers nothing, except `complex`, which defaults to `'all'`.
 *
 * @example
 * ```ts
 * const registry = createToolRegistry([...taskTools], {
 *   tiers: { simple: ['list_tasks'], medium: ['list_tasks', 'add_task', 'complete_task'], complex: 'all' },
 * });
 * registry.toJSONSchema('simple'); // [{ name: 'list_tasks', description: …, parameters: { type: 'object', … } }]
 * registry.forIntent('Add a task to buy milk'); // the medium tier's 3 tools
 * ```
 */
export function createToolRegistry(tools: readonly Tool[], options: ToolRegistryOptions = {}): ToolRegistry {
  const classify = options.classify ?? classifyComplexity;
  const byName = new Map(tools.map((t) => [t.name, t]));
  const issues: { path: string; message: string }[] = [];
  const tiers = new Map<TierLevel, Tool[]>();
  const spec: TierSpec = { complex: 'all', ...options.tiers };
  for (const key of Object.keys(spec)) {
    if (!TIER_LEVELS.includes(key as TierLevel))
      issues.push({ path: `tiers.${key}`, message: `Unknown tier; expected ${TIER_LEVELS.join(', ')}.` });
  }
  for (const level of TIER_LEVELS) {
    const names = spec[level];
    if (names === 'all') tiers.set(level, [...tools]);
    else {
      const list: Tool[] = [];
      (names ?? []).forEach((name, i) => {
        const tool = byName.get(name);
        if (tool) list.push(tool);
        else
          issues.push({
            path: `tiers.${level}[${i}]`,
            message: `Unknown tool '${name}' (known: ${[...byName.keys()].join(', ')}).`,
          });
      });
      tiers.set(level, list);
    }
  }
  if (issues.length) throw new DefinitionError('tool registry', issues);
  const schemaCache = new Map<string, Record<string, unknown>>();
  const schemaOf = (tool: Tool): Record<string, unknown> => {
    let s = schemaCache.get(tool.name);
    if (!s) {
      const { $schema: _, ...rest } = schemaToJSONSchema(tool.input, 'input');
      schemaCache.set(tool.name, (s = rest));
    }
    return s;
  };
  const registry: ToolRegistry = {
    tools,
    forComplexity(level) {
      checkLevel(level);
      return [...tiers.get(level)!];
    },
    forIntent(intent) {
      const level = typeof intent === 'object' && intent !== null ? intent.complexity : classify(intent);
      return registry.forComplexity(level); // checks the level, whoever chose it
    },
    toJSONSchema(level, { format = 'openai' } = {}) {
      return registry
        .forComplexity(level)
        .map((t) =>
          format === 'anthropic'
            ? { name: t.name, description: t.description, input_schema: schemaOf(t) }
            : { name: t.name, description: t.description, parameters: schemaOf(t) },
        );
    },
    estimateTokens(level) {
      return Math.ceil(JSON.stringify(registry.toJSONSchema(level)).length / 4);
    },
    tierFor(tool, from = 'simple') {
      checkLevel(from);
      return TIER_LEVELS.slice(TIER_LEVELS.indexOf(from)).find((l) => tiers.get(l)!.some((t) => t.name === tool));
    },
  };
  return registry;
}
