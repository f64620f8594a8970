// What an invoker is: the call it receives, the function that makes it, and the wrapper around it.

/** One tool call as the invoker sees it. */
export interface ToolCall {
  tool: string;
  /** Already validated against the tool's input schema. */
  input: unknown;
  /** 1-based. */
  attempt: number;
  /** Aborted on timeout, deadline or caller cancel. */
  signal: AbortSignal;
  /** Set for write/destructive tools. */
  idempotencyKey?: string;
  runId: string;
  traceId: string;
  sessionId?: string;
  /** The trusted context. */
  context: Readonly<Record<string, unknown>>;
  /**
   * Reports how far the tool got (`call.progress({ done: 3, of: 10 })`): a `step:progress` event for
   * whoever watches the run (`runner.watch`, `runner.stream`), redacted like traces. Costs nothing
   * when the run records no events; never throws.
   */
  progress(data: unknown): void;
}

/**
 * How tools are really called: any transport. An invoker may declare which tools it can run
 * (`serves`): the runner then checks every chain before its first step — `createRunner` its
 * `chains`, `run` and `resume` the chain they are given — and a chain with a tool the invoker does
 * not serve is a `DefinitionError` naming the chain and the tools, before any confirmation is asked.
 * `functionInvoker` and `createMockInvoker` declare it; an invoker without it is assumed to serve every tool.
 *
 * @example
 * ```ts
 * const names = new Set(['get_weather']);
 * const invoker: ToolInvoker = Object.assign(async (call: ToolCall) => callMyBackend(call), {
 *   serves: (tool: string) => names.has(tool),
 * });
 * ```
 */
export interface ToolInvoker {
  (call: ToolCall): Promise<unknown>;
  /** Whether this invoker can run tool `tool` (optional; the answer should not change over the invoker's life). */
  serves?(tool: string): boolean;
}

/**
 * Runs around each attempt's invoker call (`hooks.wrapInvoke`): it must call `invoke(call)` once
 * and return (or await) its result. `step` is the step id (the tool name for `runner.invoke`).
 * Lets tracing run the tool inside its span's context, so spans the tool starts are its children.
 *
 * @example
 * ```ts
 * const wrapInvoke: InvokeWrapper = (invoke, call) => context.with(ctx, invoke, undefined, call);
 * ```
 */
export type InvokeWrapper = (invoke: ToolInvoker, call: ToolCall, step: string | undefined) => Promise<unknown>;
