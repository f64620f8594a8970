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

/** How tools are really called: any transport. */
export type ToolInvoker = (call: ToolCall) => Promise<unknown>;

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
