// Error alternatives: what an agent could do instead, by category — machine-readable, ranked, at most 5.
import type { Alternative, ChainErrorInfo } from '../errors/categories.js';
import type { GuidanceSources } from './suggest.js';
import { chainDuration } from './suggest.js';

const MAX = 5;
/** Input over this many characters earns `split_input` after a timeout. */
const SPLIT_INPUT_OVER_CHARS = 10_000;
/** `increase_timeout` offers twice the timeout that applied, up to this (never less than the tool's own). */
const MAX_SUGGESTED_TIMEOUT_MS = 120_000;

/**
 * Alternatives for a failure, best first, at most 5. `suggestion` is an action with an argument
 * (`tool:quick_search`, `chain:task_summary`, `retry_after:5000`, `increase_timeout:6000`,
 * `split_input`, `save_progress`, `retry_later:30000`, `ask_user`, `fix_input`, `reauthenticate`);
 * `reason` says why, for people.
 *
 * After a timeout: faster declared alternatives, then `split_input` (only for input over 10,000
 * characters) and `increase_timeout` (twice the timeout that applied, up to 120 s, never less than
 * the tool's own, and only when that is longer); these two always keep their place within the 5.
 * The input size and the timeout are read from `error.context`.
 *
 * @example
 * ```ts
 * alternativesFor(guidance, {
 *   category: 'timeout', tool: 'search', context: { inputSize: 24_000, timeoutMs: 5000 }, …
 * });
 * // [{ suggestion: 'tool:quick_search', … }, { suggestion: 'split_input', … },
 * //   { suggestion: 'increase_timeout:10000', … }]
 * ```
 */
export function alternativesFor(src: GuidanceSources, error: ChainErrorInfo): Alternative[] {
  const out: Alternative[] = [];
  const tool = error.tool !== undefined ? src.tools.get(error.tool) : undefined;
  const failed = tool ? src.timing.estimate(tool.name) : undefined;

  // Declared alternatives, with what history says about them: faster ones first for timeouts,
  // more reliable ones first otherwise.
  const declared = (tool?.alternatives ?? [])
    .map((name) => {
      const asTool = src.tools.get(name);
      const asChain = asTool ? undefined : src.chains.get(name);
      if (!asTool && !asChain) return undefined;
      const estimate = asTool ? src.timing.estimate(name) : undefined;
      const estimatedDurationMs = estimate ? estimate.estimatedDurationMs : chainDuration(src, asChain!);
      const stats = asTool ? src.metrics.callStats(name) : {};
      const calls = (stats.chain?.invocations ?? 0) + (stats.direct?.invocations ?? 0);
      const ok = (stats.chain?.successes ?? 0) + (stats.direct?.successes ?? 0);
      // A tool nothing is known of has the 15 s default: no claim of speed is made for it.
      const known = estimate ? estimate.source !== 'default' : true;
      return {
        name,
        kind: asTool ? 'tool' : 'chain',
        estimatedDurationMs,
        known,
        successRate: calls ? ok / calls : undefined,
      };
    })
    .filter((d): d is NonNullable<typeof d> => d !== undefined);
  const offer = (d: (typeof declared)[number], why: string): void => {
    out.push({ suggestion: `${d.kind}:${d.name}`, reason: why, estimatedDurationMs: d.estimatedDurationMs });
  };

  switch (error.category) {
    case 'timeout': {
      const specific: Alternative[] = [];
      const inputSize = error.context?.inputSize;
      if (inputSize !== undefined && inputSize > SPLIT_INPUT_OVER_CHARS)
        specific.push({
          suggestion: 'split_input',
          reason: `The input is large (${inputSize} characters): send it in smaller parts`,
        });
      if (tool) {
        const applied = error.context?.timeoutMs ?? tool.timeoutMs;
        const longer = Math.max(tool.timeoutMs, Math.min(applied * 2, MAX_SUGGESTED_TIMEOUT_MS));
        if (longer > applied)
          specific.push({
            suggestion: `increase_timeout:${longer}`,
            reason: `The tool may need more than ${applied} ms for this input`,
          });
      }
      // Faster tools first, but never so many that the timeout-specific advice is pushed out.
      const room = MAX - specific.length;
      const unknownSpeed = failed === undefined || failed.source === 'default';
      for (const d of [...declared].sort((a, b) => a.estimatedDurationMs - b.estimatedDurationMs)) {
        if (out.length >= room) break;
        if (unknownSpeed || (d.known && d.estimatedDurationMs < failed.estimatedDurationMs))
          offer(d, d.known ? `Does the same job, usually in ~${d.estimatedDurationMs} ms` : 'Does the same job');
      }
      out.push(...specific);
      break;
    }
    case 'rate_limited':
    case 'queue_full':
      out.push({ suggestion: `retry_after:${error.retryAfterMs ?? 60_000}`, reason: 'The limit resets then' });
      out.push({ suggestion: 'save_progress', reason: 'Keep what is done and continue after the wait' });
      for (const d of declared) offer(d, 'Does the same job under a different limit');
      break;
    case 'unavailable':
    case 'network':
    case 'internal':
    case 'circuit_open': {
      const reliable = [...declared].sort((a, b) => (b.successRate ?? 0.5) - (a.successRate ?? 0.5));
      for (const d of reliable)
        offer(
          d,
          d.successRate !== undefined
            ? `Worked in ${Math.round(d.successRate * 100)} % of recent calls`
            : 'Does the same job',
        );
      out.push({
        suggestion: `retry_later:${error.retryAfterMs ?? 30_000}`,
        reason: 'The service may recover shortly',
      });
      break;
    }
    case 'not_found':
    case 'ambiguous':
      out.push({
        suggestion: 'ask_user',
        reason:
          error.category === 'ambiguous'
            ? 'Several items match: let the user choose'
            : 'Ask which item the user means, or list what exists',
      });
      break;
    case 'invalid_input':
    case 'validation':
      out.push({ suggestion: 'fix_input', reason: 'Correct the arguments to match the schema' });
      break;
    case 'authentication_required':
      out.push({ suggestion: 'reauthenticate', reason: 'The credentials expired' });
      break;
    case 'permission_denied':
      out.push({ suggestion: 'ask_user', reason: 'The user lacks permission: tell them or ask for another target' });
      break;
    default:
      break;
  }
  return out.slice(0, MAX);
}
