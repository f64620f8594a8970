/**
 * chainkit: run multi-step AI-agent tool chains reliably. Definitions, the runner, errors, events,
 * guidance, memory stores, built-in task tools and chains, invokers and rendering.
 *
 * @module chainkit
 */
// This file is the table of contents.

// Definitions
export {
  defineTool,
  type IdempotencyKeyCall,
  type Tool,
  type ToolSpec,
  type ToolEffect,
  type ToolInput,
  type ToolOutput,
  type RateLimitSpec,
  type RateLimitKeyCall,
  type ToolSuggestion,
} from './define/tool.js';
export {
  defineChain,
  type Chain,
  type ChainInput,
  type ChainContext,
  type ChainOutput,
  type ChainRunInput,
  type ChainRunContext,
} from './define/chain.js';
export type {
  ChainSpec,
  Step,
  ToolStep,
  SelectStep,
  ComputeStep,
  StepCommon,
  ConfirmSpec,
  FieldMatcher,
  InputMapping,
  Precondition,
} from './define/spec.js';
export type {
  SubChainStep,
  ForEachStep,
  ItemScope,
  BranchStep,
  BranchCase,
  LoopStep,
  SleepStep,
  WaitForStep,
  ChainLike,
  SubChainCall,
} from './define/spec.js';
export { ref, Ref, type Scope } from './define/ref.js';
export { chain, type ChainBuilder } from './define/builder.js';
export {
  type ComputeOptions,
  type RefSources,
  type SelectSpec,
  type StepOptions,
  type TypedRef,
} from './define/builder-refs.js';
export type { ItemRef, ForEachSpec, BranchSpec, LoopSpec } from './define/builder-flow.js';
export type { ChainOptions } from './define/builder-steps.js';
export type { ChainOutputOf, ItemResult, LastResult, StepResults } from './define/step-results.js';
export type {
  ContextInputOf,
  ContextOf,
  ElementOf,
  MappingOf,
  PathOf,
  RefPath,
  RefValueAt,
  SelectResult,
  ValueAt,
  WhereOf,
} from './define/infer.js';
export type { CheckedSteps } from './define/ref-check.js';
export type { Schema, SchemaInput, SchemaIssue, SchemaOutput, StandardSchemaV1 } from './define/schema.js';

// Running
export { createRunner } from './run/runner.js';
export type { Runner, RunStream } from './run/runner-api.js';
export type { RunnerOptions } from './run/runner-options.js';
export { rerunIdOf, type Rerun, type RerunRefusal } from './run/rerun.js';
export { RunWatchError, type WatchOptions } from './run/watch.js';
export type { RunInfo } from './run/durable.js';
export { runChain, type RunChainOptions } from './run/run-chain.js';
export type {
  RunResult,
  InvokeResult,
  RunResultBase,
  ConfirmationRequest,
  InDoubtStep,
  RunWaiting,
} from './observe/result.js';
export type {
  RunOptions,
  RunOptionsArgs,
  ResumeOptions,
  ResumedOutput,
  InvokeOptions,
  RunDecision,
  GateDecision,
  RetryDecision,
  DecideResult,
} from './run/types.js';
export { SignalRefused, type SignalResult } from './run/signal.js';
export type { Logger } from './observe/logger.js';
export type { InvokeWrapper, ToolCall, ToolInvoker } from './invokers/types.js';
export { toModelResult, type ModelResult, type ModelResultOptions } from './run/model-result.js';

// Errors
export { DefinitionError, isDefinitionError, type DefinitionIssue } from './errors/definition-error.js';
export {
  ERROR_CATEGORIES,
  DEFAULT_RETRY_TABLE,
  type ErrorCategory,
  type ChainErrorInfo,
  type ErrorContext,
  type Alternative,
  type RetryRule,
  type RetryTable,
} from './errors/categories.js';
export { codeClassifier, DEFAULT_CLASSIFIERS, type CodeRule } from './errors/classify.js';
export { type Classified, type Classifier } from './errors/failure.js';

// Events, traces, rendering
export type {
  RunnerEvents,
  RunnerEventName,
  RunnerEmitter,
  Hooks,
  ChainStartEvent,
  ChainEndEvent,
  StepStartEvent,
  StepEndEvent,
  RunRecoveredEvent,
  RunEndEvent,
  StepRetryEvent,
  ConfirmationRequestedEvent,
  HookErrorEvent,
  BreakerChangeEvent,
  TierEscalationEvent,
} from './observe/events.js';
export type {
  RunEvent,
  RunEventType,
  RunEventBase,
  RunEventDraft,
  RunEndData,
  RunStartRunEvent,
  StepStartRunEvent,
  StepProgressRunEvent,
  StepRetryRunEvent,
  StepEndRunEvent,
  ConfirmationRequestedRunEvent,
  RunEndRunEvent,
} from './observe/run-events.js';
export type { ItemEndEvent } from './observe/events.js';
export type { ItemEndRunEvent, SignalReceivedRunEvent } from './observe/run-events.js';
export type { Trace, TraceStep, TraceStepStatus, TraceStatus, ToolTransition } from './observe/trace.js';
export { IDENTITY_KEY } from './observe/trace.js';
export { redact, type RedactRule } from './util/redact.js';
export { formatTrace, toMermaid, type FormatTraceOptions } from './observe/render.js';

// Guidance
export type { ResponseMetadata, TimingMetadata, NextToolSuggestion, ChainSuggestion } from './observe/result.js';
export {
  MetricsCollector,
  type MetricsOptions,
  type ChainSummary,
  type CommonChain,
  type TransitionStats,
  type CallStats,
  type AdviceStats,
} from './guidance/metrics.js';
export { metricsTool, type MetricsToolDefinition, type MetricsToolResult } from './guidance/metrics-tool.js';
export {
  TimingModel,
  DEFAULT_ESTIMATE_MS,
  type TimingEstimate,
  type TimingData,
  type Confidence,
  type EstimateSource,
} from './guidance/timing.js';
export type { FallbackRule } from './guidance/fallback.js';
export {
  createToolRegistry,
  type ToolRegistry,
  type ToolRegistryOptions,
  type TierSpec,
  type FunctionDefinition,
} from './guidance/tiers.js';
export type { TierLevel } from './guidance/intent.js';
export { classifyComplexity } from './guidance/intent.js';

// Stores (the store contracts, for writing a store: chainkit/stores)
export {
  memoryBreakerStore,
  memoryCheckpointStore,
  memoryIdempotencyStore,
  type MemoryCheckpointStoreOptions,
  type MemoryIdempotencyStoreOptions,
  type MemoryStoreOptions,
} from './stores/memory.js';
export { memoryRunStore, type MemoryRunStoreOptions } from './stores/memory-runs.js';
export type { ListRunsFilter, RunPage } from './stores/run-list.js';
export type { RunRecord } from './stores/run-store.js';
export type { RunStatus, RunSummary } from './stores/run-listing.js';
export type { BreakerOptions } from './policies/breaker.js';
export {
  memoryLimiterStore,
  type Limiter,
  type LimiterStore,
  type MemoryLimiterOptions,
  type MemoryLimiterStore,
  type Refusal,
  type Release,
} from './policies/window-limiter.js';
export { AbortScope } from './policies/abort.js';

// Invokers
export {
  functionInvoker,
  type ToolFunction,
  type ToolErrorResult,
  type ToolImplementations,
  type ToolResultOf,
} from './invokers/function.js';
export { httpInvoker, HttpToolError, HttpResponseRefused, type HttpInvokerOptions } from './invokers/http.js';

// The task domain
export {
  Task,
  listTasks,
  addTask,
  updateTask,
  completeTask,
  deleteTask,
  taskTools,
  taskErrors,
} from './tasks/tools.js';
export {
  findAndUpdate,
  findAndDelete,
  findAndComplete,
  taskSummary,
  taskChains,
  type CompletedTask,
  type TaskSummary,
} from './tasks/chains.js';
export { completeAll, COMPLETE_ALL_CONFIRM_OVER, type CompletedAll } from './tasks/complete-all.js';
