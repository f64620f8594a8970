// What to do next: tools that usually follow (declared and learned) and chains that fit the session.
import type { Chain } from '../define/chain.js';
import type { Tool } from '../define/tool.js';
import type { ChainSuggestion, NextToolSuggestion } from '../observe/result.js';
import type { MetricsCollector } from './metrics.js';
import type { TimingModel } from './timing.js';

/** What guidance reads. */
export interface GuidanceSources {
  tools: ReadonlyMap<string, Tool>;
  chains: ReadonlyMap<string, Chain>;
  metrics: MetricsCollector;
  timing: TimingModel;
}

/** Learned transitions count as suggestions once seen this often, with this success rate. */
const MIN_COUNT = 5;
const MIN_SUCCESS = 0.7;

/** Declared `suggests` of `tool`, then learned transitions (count ≥ 5, success > 0.7) by count. */
export function nextTools(src: GuidanceSources, tool: string): NextToolSuggestion[] {
  const declared = src.tools.get(tool)?.suggests ?? NO_SUGGESTS;
  const learned = src.metrics
    .frequentFollowers(tool, MIN_COUNT, MIN_SUCCESS)
    ?.filter(([to]) => !declared.some((s) => s.tool === to));
  // Built by map, not push: every result keeps this array, and a pushed-into one keeps spare capacity.
  const out = declared.map((s): NextToolSuggestion => ({
    tool: s.tool,
    reason: s.reason,
    estimatedDurationMs: src.timing.estimate(s.tool).estimatedDurationMs,
  }));
  if (learned === undefined || learned.length === 0) return out;
  return out.concat(
    learned.map(([to, t]) => ({
      tool: to,
      reason: `Often follows ${tool} (${t.count} times, ${Math.round(t.successRate * 100)} % successful)`,
      estimatedDurationMs: src.timing.estimate(to).estimatedDurationMs,
    })),
  );
}

const NO_SUGGESTS: readonly { tool: string; reason: string }[] = Object.freeze([]);
const words = (text: string): string[] => text.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/**
 * Chains ranked by how many of their tools the session already used and by how well `goal`
 * matches their keywords (×3), use cases (×2) and description (×1); the top 3 with any match.
 * Made for every result: the session's few tools are searched as they are, and words are only
 * split out when there is a goal.
 */
export function relevantChains(
  src: GuidanceSources,
  sessionTools: readonly string[],
  goal?: string,
): ChainSuggestion[] {
  const goalWords = goal ? new Set(words(goal)) : undefined;
  let scored: { chain: Chain; score: number }[] | undefined;
  for (const chain of src.chains.values()) {
    let score = 0;
    for (const p of chain.plan) if (p.tool && sessionTools.includes(p.tool.name)) score += 1;
    if (goalWords !== undefined && goalWords.size > 0) {
      for (const k of chain.keywords) for (const w of words(k)) if (goalWords.has(w)) score += 3;
      for (const u of chain.useCases) for (const w of words(u)) if (goalWords.has(w)) score += 2;
      for (const w of words(chain.description)) if (goalWords.has(w)) score += 1;
    }
    if (score > 0) (scored ??= []).push({ chain, score });
  }
  if (scored === undefined) return [];
  if (scored.length > 1) scored.sort((a, b) => b.score - a.score);
  if (scored.length > 3) scored.length = 3;
  return scored.map(({ chain }) => ({
    chain: chain.name,
    description: chain.description,
    estimatedDurationMs: chainDuration(src, chain),
  }));
}

/** The sum of the estimates of a chain's tool steps. */
export function chainDuration(src: GuidanceSources, chain: Chain): number {
  let total = 0;
  for (const p of chain.plan) if (p.tool) total += src.timing.estimate(p.tool.name).estimatedDurationMs;
  return total;
}
