// Typed run events on an eventemitter3 emitter, and hooks that can never change a run's outcome.
import { EventEmitter } from 'eventemitter3';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Trace, TraceStepStatus, ToolTransition } from './trace.js';
import type { InvokeWrapper } from '../invokers/types.js';

/** Emitted when a run or resume starts. */
export interface ChainStartEvent {
  runId: string;
  traceId: string;
  chain: string;
  sessionId?: string;
  resumed: boolean;
}
/**
 * Emitted when a run or resume ends, whatever the outcome. A failure's `error`
 * and `trace` are already masked (secret values removed from every text).
 */
export interface ChainEndEvent {
  runId: string;
  traceId: string;
  chain: string;
  sessionId?: string;
  status: Trace['status'];
  durationMs: number;
  error?: ChainErrorInfo;
  trace: Trace;
}
/** Emitted before a step (or an `invoke` call) starts. */
export interface StepStartEvent {
  runId: string;
  traceId: string;
  chain?: string;
  step: string;
  tool?: string;
  stepNumber: number;
}
/** Emitted when a step ends; a failure's `error` is already masked (secret values removed from every text). */
export interface StepEndEvent {
  runId: string;
  traceId: string;
  chain?: string;
  step: string;
  tool?: string;
  status: TraceStepStatus;
  attempts: number;
  latencyMs: number;
  error?: ChainErrorInfo;
}
/** Emitted before a retry's wait starts. */
export interface StepRetryEvent {
  runId: string;
  traceId: string;
  chain?: string;
  step?: string;
  tool: string;
  attempt: number;
  delayMs: number;
  category: string;
  code: string;
  /** The failed attempt's message, secret values of the call's input and context masked. */
  message: string;
}
/** Emitted when a run stops at a confirmation gate. */
export interface ConfirmationRequestedEvent {
  runId: string;
  traceId: string;
  chain: string;
  step: string;
  tool: string;
  prompt: string;
  expiresAt: string;
}
/** Emitted when a tool's circuit breaker opens or closes. */
export interface BreakerChangeEvent {
  tool: string;
  state: 'open' | 'closed';
  at: number;
}
/** Emitted when `invoke(…, { tier })` had to use a higher tier. */
export interface TierEscalationEvent {
  tool: string;
  from: string;
  to: string;
}
/** Emitted when a runner took over a durable run whose owner died (`recover()`, or its run id run again). */
export interface RunRecoveredEvent {
  runId: string;
  traceId: string;
  chain: string;
  sessionId?: string;
  previousOwner: string;
  owner: string;
  journaled: string[];
}
/** Emitted when a durable run ends or parks at a gate, with its result (masked like every result). */
export interface RunEndEvent {
  runId: string;
  traceId: string;
  chain: string;
  sessionId?: string;
  status: Trace['status'];
  recovered: boolean;
  result: import('./result.js').RunResult;
}
/** Emitted when a hook threw or rejected; the run went on unaffected. */
export interface HookErrorEvent {
  event: string;
  error: unknown;
}
/** A `forEach` item ended (§12): `step` is the forEach step's id, `index` the element's. */
export interface ItemEndEvent {
  runId: string;
  traceId: string;
  chain: string;
  step: string;
  index: number;
  status: TraceStepStatus;
  latencyMs: number;
  error?: ChainErrorInfo;
}

/** Every event the runner emits, with its payload. */
export interface RunnerEvents {
  /** A run or resume started. */
  'chain:start': (e: ChainStartEvent) => void;
  /** A run or resume ended, whatever the outcome. */
  'chain:end': (e: ChainEndEvent) => void;
  /** A step (or an `invoke` call) started. */
  'step:start': (e: StepStartEvent) => void;
  /** A step ended. */
  'step:end': (e: StepEndEvent) => void;
  /** A failed attempt will be retried after `delayMs`. */
  'step:retry': (e: StepRetryEvent) => void;
  /** One tool followed another in a session. */
  'tool:transition': (e: ToolTransition) => void;
  /** A run stopped at a confirmation gate. */
  'confirmation:requested': (e: ConfirmationRequestedEvent) => void;
  /** A tool's circuit breaker opened or closed. */
  'breaker:change': (e: BreakerChangeEvent) => void;
  /** `invoke(…, { tier })` escalated to a higher tier. */
  'tier:escalation': (e: TierEscalationEvent) => void;
  /** A durable run was taken over from an owner that died. */
  'run:recovered': (e: RunRecoveredEvent) => void;
  /** A durable run ended or parked at a gate (its original caller may be gone). */
  'run:end': (e: RunEndEvent) => void;
  /** A hook or listener threw; the run went on. */
  'hook:error': (e: HookErrorEvent) => void;
  /** A `forEach` item ended. */
  'item:end': (e: ItemEndEvent) => void;
}

/** The name of a runner event. */
export type RunnerEventName = keyof RunnerEvents;

/** The runner's typed emitter (`runner.events`). */
export type RunnerEmitter = EventEmitter<RunnerEvents>;

/** Callbacks for the runner's events; each may be async. A failing hook is reported as `hook:error`. */
export interface Hooks {
  /** On `chain:start`. */
  onChainStart?: (e: ChainStartEvent) => void | Promise<void>;
  /** On `chain:end`. */
  onChainEnd?: (e: ChainEndEvent) => void | Promise<void>;
  /** On `step:start`. */
  onStepStart?: (e: StepStartEvent) => void | Promise<void>;
  /** On `step:end`. */
  onStepEnd?: (e: StepEndEvent) => void | Promise<void>;
  /** On `step:retry`. */
  onStepRetry?: (e: StepRetryEvent) => void | Promise<void>;
  /** On `tool:transition`. */
  onToolTransition?: (e: ToolTransition) => void | Promise<void>;
  /** On `confirmation:requested`. */
  onConfirmationRequested?: (e: ConfirmationRequestedEvent) => void | Promise<void>;
  /** On `breaker:change`. */
  onBreakerChange?: (e: BreakerChangeEvent) => void | Promise<void>;
  /** On `tier:escalation`. */
  onTierEscalation?: (e: TierEscalationEvent) => void | Promise<void>;
  /** On `run:recovered`. */
  onRunRecovered?: (e: RunRecoveredEvent) => void | Promise<void>;
  /** On `run:end`. */
  onRunEnd?: (e: RunEndEvent) => void | Promise<void>;
  /** On `hook:error` (its own failures are swallowed). */
  onHookError?: (e: HookErrorEvent) => void | Promise<void>;
  /** On `item:end`. */
  onItemEnd?: (e: ItemEndEvent) => void | Promise<void>;
  /**
   * Not an event: runs around each attempt's invoker call and must call `invoke(call)` once,
   * returning its result (e.g. to run the tool inside a tracing span's context). Unlike the
   * callbacks above it is on the call's path: whatever it throws is the attempt's failure.
   */
  wrapInvoke?: InvokeWrapper;
}

const HOOK_EVENTS: [keyof Hooks, RunnerEventName][] = [
  ['onChainStart', 'chain:start'],
  ['onChainEnd', 'chain:end'],
  ['onStepStart', 'step:start'],
  ['onStepEnd', 'step:end'],
  ['onStepRetry', 'step:retry'],
  ['onToolTransition', 'tool:transition'],
  ['onConfirmationRequested', 'confirmation:requested'],
  ['onBreakerChange', 'breaker:change'],
  ['onTierEscalation', 'tier:escalation'],
  ['onRunRecovered', 'run:recovered'],
  ['onRunEnd', 'run:end'],
  ['onHookError', 'hook:error'],
  ['onItemEnd', 'item:end'],
];

/** Creates the emitter and subscribes `hooks`, each isolated so it cannot affect a run. */
export function createEmitter(hooks: Hooks | undefined): RunnerEmitter {
  const events = new EventEmitter<RunnerEvents>();
  if (!hooks) return events;
  for (const [key, name] of HOOK_EVENTS) {
    const fn = hooks[key] as ((e: unknown) => unknown) | undefined;
    if (typeof fn !== 'function') continue;
    const report = (error: unknown): void => {
      if (name !== 'hook:error') safeEmit(events, 'hook:error', { event: name, error });
    };
    events.on(name, ((payload: unknown) => {
      try {
        const r = fn(payload);
        if (r && typeof (r as Promise<unknown>).then === 'function') (r as Promise<unknown>).then(undefined, report);
      } catch (error) {
        report(error);
      }
    }) as never);
  }
  return events;
}

/** True when someone listens; payloads are only built then. */
export function listening(events: RunnerEmitter, name: RunnerEventName): boolean {
  return events.listenerCount(name) > 0;
}

/** Emits without letting a throwing listener escape into the run. */
export function safeEmit<K extends RunnerEventName>(
  events: RunnerEmitter,
  name: K,
  payload: Parameters<RunnerEvents[K]>[0],
): void {
  try {
    (events.emit as (n: string, p: unknown) => boolean)(name, payload);
  } catch (error) {
    if (name !== 'hook:error') safeEmit(events, 'hook:error', { event: name, error });
  }
}
