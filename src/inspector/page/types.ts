// The shapes the inspector's JSON API answers with (src/inspector/handler.ts), as the page reads them.
export type Json = Record<string, unknown>;
interface Summary {
  runId: string;
  chain: string;
  status: string;
  startedAt: number;
  endedAt?: number;
  steps: number;
  error?: { category: string; code: string };
  awaiting?: { step: string; question: string };
}
export interface Caps {
  readOnly: boolean;
  signal: boolean;
  rerun: boolean;
}
export interface Step {
  stepNumber: number;
  id: string;
  tool?: string;
  status: string;
  attempts: number;
  latencyMs: number;
  startedAt: string;
  input?: unknown;
  output?: unknown;
  error?: Json;
  decidedBy?: string;
  children?: Step[];
  extra?: Json;
  /** How deep in sub-chains (0: a step of the run itself). */
  depth?: number;
}
export interface RunView {
  runId: string;
  chain: string;
  status: string;
  rerunOf?: string;
  traceStatus?: string;
  startedAt?: string;
  endedAt?: string;
  totalLatencyMs?: number;
  decidedBy?: string;
  journaled: string[];
  steps: Step[];
  output?: unknown;
  error?: Json;
  awaiting?: { step: string; tool: string; prompt: string; expiresAt: string };
  declinedStep?: string;
  compensated?: string[];
  compensationFailures?: { step: string; error: Json }[];
}
export interface RunEvent {
  seq: number;
  at: number;
  type: string;
  step?: string;
  data: Json;
}
export interface Overview {
  capabilities: Caps;
  counts: {
    byStatus: Record<string, number>;
    byChain: Record<string, Record<string, number>>;
    sampled: number;
    more: boolean;
  };
  inbox: Summary[];
  runs: Summary[];
  cursor?: string;
  breakers: { tool: string; state: string; at: number }[];
  rateLimits: { tool: string; refusals: number; lastWaitMs?: number; lastCode: string; at: number }[];
  learned: {
    transitions: Record<string, Record<string, { count: number; successRate: number; avgGapMs: number }>>;
    commonChains: { tools: string[]; occurrences: number; avgSuccessRate: number; avgTotalDurationMs: number }[];
    timing: {
      tool: string;
      estimatedDurationMs: number;
      confidence: string;
      source: string;
      samples: number;
      timeoutMs: number;
      willTimeout: boolean;
    }[];
  };
}
