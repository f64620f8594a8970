// The `metadata` every result carries: timing, next-step suggestions, advice and context (docs/guides/guidance.md).
import type { Chain } from '../define/chain.js';
import type { Tool } from '../define/tool.js';
import type { ResponseMetadata, TimingMetadata } from '../observe/result.js';
import { nextTools, relevantChains, type GuidanceSources } from './suggest.js';

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
const SOURCE_ORDER = { default: 0, declared: 1, learned: 2 } as const;

/** Builds the metadata of a result from what the runner has learned. Cheap: no scans, cached estimates. */
export function buildMetadata(src: GuidanceSources, m: MetadataInput): ResponseMetadata {
  let estimatedDurationMs = 0;
  let confidence: TimingMetadata['confidence'] = 'high';
  let source: TimingMetadata['source'] = 'learned';
  let willTimeout = false;
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
      if (SOURCE_ORDER[e.source] < SOURCE_ORDER[source]) source = e.source;
    }
    if (!any) {
      confidence = 'low';
      source = 'default';
    }
    // A default estimate predicts nothing: only what is declared or learned may say "will time out".
    willTimeout = source !== 'default' && timeoutMs > 0 && estimatedDurationMs > timeoutMs;
  } else if (m.tool) {
    const e = src.timing.estimate(m.tool.name);
    estimatedDurationMs = e.estimatedDurationMs;
    confidence = e.confidence;
    source = e.source;
    timeoutMs = m.tool.timeoutMs;
    willTimeout = e.willTimeout;
  } else {
    confidence = 'low';
    source = 'default';
  }
  const context: ResponseMetadata['context'] = { ...m.context };
  if (m.chain) {
    context.chain = m.chain.name;
    context.toolCount = m.chain.plan.filter((p) => p.tool).length;
  }
  if (m.tool) context.tool = m.tool.name;
  return {
    timing: { estimatedDurationMs, actualDurationMs: m.actualDurationMs, confidence, source, willTimeout, timeoutMs },
    suggestions: {
      nextTools: m.lastTool ? nextTools(src, m.lastTool) : [],
      relevantChains: relevantChains(src, m.sessionTools),
    },
    advice: m.advice,
    context,
  };
}
