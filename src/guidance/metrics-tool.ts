// What the runner learned, offered to an agent as a read-only tool: the transition matrix and common chains.
import { z } from 'zod';
import type { AdviceStats, ChainSummary, CommonChain, MetricsCollector, TransitionStats } from './metrics.js';

const NAME = 'chainkit_metrics';
const DESCRIPTION =
  'Read-only: what this system learned from past tool use. ' +
  '`view: "common_chains"` lists tool sequences that often succeed together; ' +
  '`view: "transitions"` gives, for each tool (or only `from`), which tools were called next, ' +
  'how often and how successfully; ' +
  '`view: "summary"` gives both, with entry and terminal tools and how often fallback advice was given. ' +
  'Changes nothing.';

const Input = z
  .object({
    view: z.enum(['summary', 'transitions', 'common_chains']).default('summary'),
    /** Only the transitions from this tool. */
    from: z.string().min(1).max(200).optional(),
    /** At most this many common chains and transition rows. */
    limit: z.number().int().min(1).max(100).default(20),
  })
  .strict();

/** What the metrics tool answers. */
export type MetricsToolResult =
  | { status: 'ok'; view: 'common_chains'; commonChains: CommonChain[] }
  | { status: 'ok'; view: 'transitions'; transitions: Record<string, Record<string, TransitionStats>> }
  | ({ status: 'ok'; view: 'summary'; fallbackAdvice: AdviceStats } & ChainSummary)
  | { status: 'error'; error: 'invalid_input'; message: string };

/** A read-only tool definition an agent can be given: LLM function definition fields, and `execute`. */
export interface MetricsToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the input (`parameters` in OpenAI's format; the same object as `input_schema`). */
  readonly parameters: Record<string, unknown>;
  /** The same JSON Schema, under Anthropic's name. */
  readonly input_schema: Record<string, unknown>;
  /** Always true: it reads what was learned and changes nothing (no call, no transition is recorded). */
  readonly readOnly: true;
  /** Answers a call; never throws (bad input is an `invalid_input` answer the model can correct). */
  execute(input: unknown): MetricsToolResult;
}

const SCHEMA: Record<string, unknown> = Object.freeze({
  type: 'object',
  properties: {
    view: {
      type: 'string',
      enum: ['summary', 'transitions', 'common_chains'],
      default: 'summary',
      description: 'What to read.',
    },
    from: { type: 'string', description: 'Only the transitions from this tool.' },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 20,
      description: 'At most this many common chains and transition rows.',
    },
  },
  additionalProperties: false,
});

// Rows in insertion order, the busiest first: a model reads the head of a long answer.
function topRows(
  matrix: Record<string, Record<string, TransitionStats>>,
  limit: number,
): Record<string, Record<string, TransitionStats>> {
  const total = (row: Record<string, TransitionStats>): number => Object.values(row).reduce((n, t) => n + t.count, 0);
  const out = Object.create(null) as Record<string, Record<string, TransitionStats>>;
  for (const [from, row] of Object.entries(matrix)
    .sort((a, b) => total(b[1]) - total(a[1]))
    .slice(0, limit))
    out[from] = row;
  return out;
}

/**
 * The runner's learned metrics as a read-only tool an agent can be given: the transition matrix
 * (`view: 'transitions'`, optionally `from` one tool), the common chains (`view: 'common_chains'`)
 * or both with entry/terminal tools and fallback-advice counts (`view: 'summary'`). Calling it
 * records nothing. Pass `name`, `description`, `parameters` (or `input_schema`) to the model and
 * route its calls to `execute`.
 *
 * @example
 * ```ts
 * const metrics = metricsTool(runner);
 * const tools = [
 *   ...registry.toJSONSchema('complex'),
 *   { name: metrics.name, description: metrics.description, parameters: metrics.parameters },
 * ];
 * // when the model calls it:
 * const answer = metrics.execute({ view: 'common_chains', limit: 5 });
 * ```
 */
export function metricsTool(runner: { readonly metrics: MetricsCollector }): MetricsToolDefinition {
  const metrics = runner?.metrics;
  if (typeof metrics?.chainSummary !== 'function')
    throw new TypeError('metricsTool: expected a runner made by createRunner().');
  return {
    name: NAME,
    description: DESCRIPTION,
    parameters: SCHEMA,
    input_schema: SCHEMA,
    readOnly: true,
    execute(input) {
      let parsed: ReturnType<typeof Input.safeParse>;
      try {
        parsed = Input.safeParse(input ?? {});
      } catch {
        return { status: 'error', error: 'invalid_input', message: 'The input could not be read.' };
      }
      if (!parsed.success)
        return {
          status: 'error',
          error: 'invalid_input',
          message: parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; '),
        };
      const { view, from, limit } = parsed.data;
      if (view === 'transitions') {
        const transitions =
          from !== undefined
            ? { [from]: metrics.transitionsFrom(from) }
            : topRows(metrics.chainSummary().transitions, limit);
        return { status: 'ok', view, transitions };
      }
      const summary = metrics.chainSummary();
      const commonChains = summary.commonChains.slice(0, limit);
      if (view === 'common_chains') return { status: 'ok', view, commonChains };
      return {
        status: 'ok',
        view,
        ...summary,
        commonChains,
        transitions: topRows(summary.transitions, limit),
        fallbackAdvice: metrics.adviceStats(),
      };
    },
  };
}
