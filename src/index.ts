/**
 * chainkit: run multi-step AI-agent tool chains reliably. Definitions, the runner, errors, events,
 * guidance, memory stores, built-in task tools and chains, invokers and rendering.
 *
 * @module chainkit
 */
// This file is the table of contents.

// Definitions
export { defineTool, isTool, type IdempotencyKeyCall, type Tool, type ToolSpec, type ToolEffect, type ToolInput, type ToolOutput, type RateLimitSpec, type RateLimitKeyCall, type ToolSuggestion } from './define/tool.js';
export {
  defineChain, isChain, type Chain, type ChainSpec, type ChainInput, type ChainContext, type ChainOutput, type ChainRunInput, type ChainRunContext, type Step, type ToolStep,
  type SelectStep, type ComputeStep, type StepCommon, type ConfirmSpec, type FieldMatcher, type InputMapping, type Precondition,
} from './define/chain.js';
export { ref, isRef, Ref, type Scope } from './define/ref.js';
export { chain, type ChainBuilder, type ChainOptions, type ComputeOptions, type RefSources, type SelectSpec, type StepOptions, type TypedRef } from './define/builder.js';
export type { ContextInputOf, ContextOf, ElementOf, LastResult, MappingOf, PathOf, RefPath, RefValueAt, SelectResult, StepResults, ValueAt, WhereOf } from './define/infer.js';
export type { CheckedSteps } from './define/ref-check.js';
export { isSchema, parseSchema, schemaToJSONSchema, type ParseResult, type Schema, type SchemaInput, type SchemaIssue, type SchemaOutput, type StandardSchemaV1 } from './define/schema.js';

// Running
export { createRunner, type Runner, type RunnerOptions, type RunStream } from './run/runner.js';
export { RunWatchError, type WatchOptions } from './run/watch.js';
export type { RunInfo } from './run/durable.js';
export { runChain, type RunChainOptions } from './run/run-chain.js';
export type { RunResult, InvokeResult, RunResultBase, ConfirmationRequest } from './observe/result.js';
export type { RunOptions, RunOptionsArgs, ResumeOptions, ResumedOutput, InvokeOptions, RunDecision, GateDecision, DecideResult } from './run/types.js';
export type { Logger } from './observe/logger.js';
export type { InvokeWrapper, ToolCall, ToolInvoker } from './invokers/types.js';
export { toModelResult, type ModelResult, type ModelResultOptions } from './run/model-result.js';

// Errors
export { DefinitionError, isDefinitionError, type DefinitionIssue } from './errors/definition-error.js';
export { ERROR_CATEGORIES, DEFAULT_RETRY_TABLE, type ErrorCategory, type ChainErrorInfo, type ErrorContext, type Alternative, type RetryRule, type RetryTable } from './errors/categories.js';
export { parseRetryAfter } from './errors/retry-after.js';
export { classifyError, codeClassifier, DEFAULT_CLASSIFIERS, type Classified, type Classifier, type CodeRule } from './errors/classify.js';

// Events, traces, rendering
export type {
  RunnerEvents, RunnerEventName, RunnerEmitter, Hooks, ChainStartEvent, ChainEndEvent, StepStartEvent, StepEndEvent, RunRecoveredEvent, RunEndEvent,
  StepRetryEvent, ConfirmationRequestedEvent, HookErrorEvent, BreakerChangeEvent, TierEscalationEvent,
  RunEvent, RunEventType, RunEventBase, RunEventDraft, RunEndData, RunStartRunEvent, StepStartRunEvent, StepProgressRunEvent, StepRetryRunEvent, StepEndRunEvent,
  ConfirmationRequestedRunEvent, RunEndRunEvent,
} from './observe/events.js';
export type { Trace, TraceStep, TraceStepStatus, TraceStatus, ToolTransition } from './observe/trace.js';
export { IDENTITY_KEY } from './observe/trace.js';
export { redact, SECRET_KEY, type RedactRule } from './observe/redact.js';
export { formatTrace, toMermaid, type FormatTraceOptions } from './observe/render.js';

// Guidance
export type { ResponseMetadata, TimingMetadata, NextToolSuggestion, ChainSuggestion } from './observe/result.js';
export { MetricsCollector, type MetricsOptions, type ChainSummary, type CommonChain, type TransitionStats, type CallStats, type AdviceStats } from './guidance/metrics.js';
export { metricsTool, type MetricsToolDefinition, type MetricsToolResult } from './guidance/metrics-tool.js';
export { TimingModel, complexityOf, inputSizeOf, DEFAULT_ESTIMATE_MS, type TimingEstimate, type TimingData, type Confidence, type EstimateSource } from './guidance/timing.js';
export { alternativesFor, SPLIT_INPUT_OVER_CHARS, MAX_SUGGESTED_TIMEOUT_MS } from './guidance/alternatives.js';
export type { GuidanceSources } from './guidance/suggest.js';
export { FallbackAdvisor, DEFAULT_FALLBACKS, STEP_BACK_ADVICE, type FallbackRule, type FallbackOptions } from './guidance/fallback.js';
export { createToolRegistry, TIER_LEVELS, type ToolRegistry, type ToolRegistryOptions, type TierLevel, type TierSpec, type FunctionDefinition } from './guidance/tiers.js';
export { classifyComplexity } from './guidance/intent.js';

// Stores
export { memoryBreakerStore, memoryCheckpointStore, memoryIdempotencyStore, type MemoryCheckpointStoreOptions, type MemoryIdempotencyStoreOptions, type MemoryStoreOptions } from './stores/memory.js';
export { encodeCheckpoint, decodeCheckpoint, CheckpointEncodeError } from './stores/serialize.js';
export { memoryRunStore, type MemoryRunStoreOptions } from './stores/memory-runs.js';
export type { ListRunsFilter, RunPage, RunSummary, RunListQuery, RunListResult, RunListAfter } from './stores/run-list.js';
export type { BreakerChange, BreakerDecision, BreakerStore, Checkpoint, CheckpointStore, IdempotencyClaim, IdempotencyStore, LearnedData, LearningStore, MaybePromise, TakeResult, TimingSample, IdempotencyBeginOptions } from './stores/types.js';
export type { RunStore, RunRecord, StoredRun, JournalEntry, RunStatus, CreateRunResult, ClaimFilter, RunEventLog } from './stores/run-store.js';
export type { BreakerOptions } from './policies/breaker.js';
export { memoryLimiterStore, type Limiter, type LimiterStore, type MemoryLimiterOptions, type MemoryLimiterStore, type Refusal, type Release } from './policies/rate-limit.js';
export { AbortScope } from './policies/abort.js';

// Invokers
export { functionInvoker, type ToolFunction, type ToolErrorResult, type ToolImplementations, type ToolResultOf } from './invokers/function.js';
export { httpInvoker, HttpToolError, HttpResponseRefused, type HttpInvokerOptions } from './invokers/http.js';

// The task domain
export { Task, listTasks, addTask, updateTask, completeTask, deleteTask, taskTools, taskErrors, TASK_NOT_FOUND_MESSAGE } from './tasks/tools.js';
export { findAndUpdate, findAndDelete, findAndComplete, taskSummary, taskChains, type CompletedTask, type TaskSummary } from './tasks/chains.js';
