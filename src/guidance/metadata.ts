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
  return {
    timing: { estimatedDurationMs, actualDurationMs: m.actualDurationMs, confidence, source, willTimeout, timeoutMs },
    suggestions: {
      nextTools: m.lastTool ? orNone(nextTools(src, m.lastTool)) : noneOf(),
      relevantChains: orNone(relevantChains(src, m.sessionTools)),
    },
    advice: orNone(m.advice),
    context: contextOf(m),
  };
}

/** The metadata's `context`: a chain's name and tool count, or a tool's name (one literal in the common cases). */
function contextOf(m: MetadataInput): ResponseMetadata['context'] {
  if (m.context === undefined && m.tool === undefined && m.chain)
    return { chain: m.chain.name, toolCount: toolCount(m.chain) };
  const context: ResponseMetadata['context'] = { ...m.context };
  if (m.chain) {
    context.chain = m.chain.name;
    context.toolCount = toolCount(m.chain);
  }
  if (m.tool) context.tool = m.tool.name;
  return context;
}

function toolCount(chain: Chain): number {
  let n = 0;
  for (const p of chain.plan) if (p.tool) n++;
  return n;
}

// Most results have no advice, and some no suggestion: they share one frozen empty array (every
// result of a run in flight is kept by its caller). Frozen, so no caller's push reaches another's.
const NONE: readonly never[] = Object.freeze([]);
/** The shared frozen empty array, typed as the metadata's arrays are. */
const noneOf = <T>(): T[] => NONE as unknown as T[];
/** `list`, or the shared frozen empty array in its place when it is empty. */
const orNone = <T>(list: T[]): T[] => (list.length === 0 ? noneOf<T>() : list);
