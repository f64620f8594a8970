// The `metadata` every result carries: timing, next-step suggestions, advice and context (docs/guides/guidance.md).
import type { Chain } from '../define/chain.js';
import type { Tool } from '../define/tool.js';
import type { ResponseMetadata, TimingMetadata } from '../observe/result.js';
import { nextTools, relevantChains, type GuidanceSources } from './suggest.js';

export type { ChainSuggestion, NextToolSuggestion, ResponseMetadata, TimingMetadata } from '../observe/result.js';

/** What a result's metadata is built from. */
export interface MetadataInput {
  chain?: Chain;
  tool?: Tool;
  /** The last tool called: drives the next-tool suggestions. */
  lastTool?: string;
  actualDurationMs: number;
  sessionTools: readonly string[];
  advice: string[];
  context?: Partial<ResponseMetadata['context']>;
}

const CONFIDENCE_ORDER = { low: 0, medium: 1, high: 2 } as const;

/** Builds the metadata of a result from what the runner has learned. Cheap: no scans, cached estimates. */
export function buildMetadata(src: GuidanceSources, m: MetadataInput): ResponseMetadata {
  let estimatedDurationMs = 0;
  let confidence: TimingMetadata['confidence'] = 'high';
  let timeoutMs = 0;
  if (m.chain) {
    timeoutMs = m.chain.timeoutMs;
    let any = false;
    for (const p of m.chain.plan) {
      if (!p.tool) continue;
      any = true;
      const e = src.timing.estimate(p.tool.name);
      estimatedDurationMs += e.estimatedDurationMs;
      if (CONFIDENCE_ORDER[e.confidence] < CONFIDENCE_ORDER[confidence]) confidence = e.confidence;
    }
    if (!any) confidence = 'low';
  } else if (m.tool) {
    const e = src.timing.estimate(m.tool.name);
    estimatedDurationMs = e.estimatedDurationMs;
    confidence = e.confidence;
    timeoutMs = m.tool.timeoutMs;
  } else {
    confidence = 'low';
  }
  const context: ResponseMetadata['context'] = { ...m.context };
  if (m.chain) {
    context.chain = m.chain.name;
    context.toolCount = m.chain.plan.filter((p) => p.tool).length;
  }
  if (m.tool) context.tool = m.tool.name;
  return {
    timing: { estimatedDurationMs, actualDurationMs: m.actualDurationMs, confidence, willTimeout: timeoutMs > 0 && estimatedDurationMs > timeoutMs, timeoutMs },
    suggestions: {
      nextTools: m.lastTool ? nextTools(src, m.lastTool) : [],
      relevantChains: relevantChains(src, m.sessionTools),
    },
    advice: m.advice,
    context,
  };
}
