// The `metadata` every result carries: timing, next-step suggestions, advice and context (API.md §7).
// This version uses what the definitions declare (expected durations, static `suggests`); learning
// from use (history-based estimates, learned transitions, fallback advice) builds on the same shape.
import type { Chain } from '../define/chain.js';
import type { Tool } from '../define/tool.js';

/** Timing of a result, estimated and actual. */
export interface TimingMetadata {
  estimatedDurationMs: number;
  actualDurationMs: number;
  confidence: 'high' | 'medium' | 'low';
  willTimeout: boolean;
  timeoutMs: number;
}

/** A tool worth calling next. */
export interface NextToolSuggestion { tool: string; reason: string; estimatedDurationMs: number }
/** A chain (preset) relevant to what the agent is doing. */
export interface ChainSuggestion { chain: string; description: string; estimatedDurationMs: number }

/** What every `run`, `resume` and `invoke` result carries besides its outcome. */
export interface ResponseMetadata {
  timing: TimingMetadata;
  suggestions: { nextTools: NextToolSuggestion[]; relevantChains: ChainSuggestion[] };
  advice: string[];
  context: { chain?: string; tool?: string; toolCount?: number; tier?: string; wasEscalated?: boolean; originalTier?: string };
}

/** The declared duration of a tool (0 when it declares none). */
export function expectedDuration(tool: Tool | undefined): number {
  return tool?.expectedDurationMs ?? 0;
}

/** Static estimate of a chain: the sum of its tool steps' declared durations. */
export function chainEstimate(chain: Chain): number {
  let total = 0;
  for (const p of chain.plan) total += expectedDuration(p.tool);
  return total;
}

/** Builds the metadata of a result from declarations; `lastTool` drives the next-tool suggestions. */
export function buildMetadata(args: {
  chain?: Chain;
  tool?: Tool;
  lastTool?: Tool;
  actualDurationMs: number;
  tools: ReadonlyMap<string, Tool>;
}): ResponseMetadata {
  const { chain, tool } = args;
  const estimatedDurationMs = chain ? chainEstimate(chain) : expectedDuration(tool);
  const timeoutMs = chain ? chain.timeoutMs : (tool?.timeoutMs ?? 0);
  const last = args.lastTool ?? tool;
  const nextTools = (last?.suggests ?? []).map((s) => ({
    tool: s.tool,
    reason: s.reason,
    estimatedDurationMs: expectedDuration(args.tools.get(s.tool)),
  }));
  const context: ResponseMetadata['context'] = {};
  if (chain) {
    context.chain = chain.name;
    context.toolCount = chain.plan.filter((p) => p.tool).length;
  }
  if (tool) context.tool = tool.name;
  return {
    timing: { estimatedDurationMs, actualDurationMs: args.actualDurationMs, confidence: 'low', willTimeout: estimatedDurationMs > timeoutMs, timeoutMs },
    suggestions: { nextTools, relevantChains: [] },
    advice: [],
    context,
  };
}
