// Error alternatives: what an agent could do instead, by category — machine-readable, ranked, at most 5.
import type { Alternative, ChainErrorInfo } from '../errors/categories.js';
import type { GuidanceSources } from './suggest.js';
import { chainDuration } from './suggest.js';

const MAX = 5;

/**
 * Alternatives for a failure, best first. `suggestion` is an action with an argument
 * (`tool:quick_search`, `chain:task_summary`, `retry_after:5000`, `increase_timeout:6000`,
 * `split_input`, `save_progress`, `retry_later:30000`, `ask_user`, `fix_input`, `reauthenticate`);
 * `reason` says why, for people.
 *
 * @example
 * ```ts
 * alternativesFor(guidance, { category: 'timeout', tool: 'search', … }, { complexity: 40 });
 * // [{ suggestion: 'tool:quick_search', reason: 'Does the same job, usually in ~120 ms', estimatedDurationMs: 120 }, …]
 * ```
 */
export function alternativesFor(src: GuidanceSources, error: ChainErrorInfo, options: { complexity?: number } = {}): Alternative[] {
  const out: Alternative[] = [];
  const tool = error.tool !== undefined ? src.tools.get(error.tool) : undefined;
  const failedEstimate = tool ? src.timing.estimate(tool.name).estimatedDurationMs : undefined;

  // Declared alternatives, with what history says about them: faster ones first for timeouts,
  // more reliable ones first otherwise.
  const declared = (tool?.alternatives ?? []).map((name) => {
    const asTool = src.tools.get(name);
    const asChain = asTool ? undefined : src.chains.get(name);
    if (!asTool && !asChain) return undefined;
    const estimatedDurationMs = asTool ? src.timing.estimate(name).estimatedDurationMs : chainDuration(src, asChain!);
    const stats = asTool ? src.metrics.callStats(name) : {};
    const calls = (stats.chain?.invocations ?? 0) + (stats.direct?.invocations ?? 0);
    const ok = (stats.chain?.successes ?? 0) + (stats.direct?.successes ?? 0);
    return { name, kind: asTool ? 'tool' : 'chain', estimatedDurationMs, successRate: calls ? ok / calls : undefined };
  }).filter((d): d is NonNullable<typeof d> => d !== undefined);
  const offer = (d: (typeof declared)[number], why: string): void => {
    out.push({ suggestion: `${d.kind}:${d.name}`, reason: why, estimatedDurationMs: d.estimatedDurationMs });
  };

  switch (error.category) {
    case 'timeout': {
      for (const d of [...declared].sort((a, b) => a.estimatedDurationMs - b.estimatedDurationMs)) {
        if (failedEstimate === undefined || d.estimatedDurationMs < failedEstimate || failedEstimate === 0) offer(d, `Does the same job, usually in ~${d.estimatedDurationMs} ms`);
      }
      if ((options.complexity ?? 1) > 1) out.push({ suggestion: 'split_input', reason: 'The input is large: send it in smaller parts' });
      if (tool) out.push({ suggestion: `increase_timeout:${Math.min(tool.timeoutMs * 2, 60_000)}`, reason: `The tool may need more than ${tool.timeoutMs} ms for this input` });
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
      for (const d of reliable) offer(d, d.successRate !== undefined ? `Worked in ${Math.round(d.successRate * 100)} % of recent calls` : 'Does the same job');
      out.push({ suggestion: `retry_later:${error.retryAfterMs ?? 30_000}`, reason: 'The service may recover shortly' });
      break;
    }
    case 'not_found':
    case 'ambiguous':
      out.push({ suggestion: 'ask_user', reason: error.category === 'ambiguous' ? 'Several items match: let the user choose' : 'Ask which item the user means, or list what exists' });
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
