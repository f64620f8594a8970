// A scripted invoker for tests: answers, failures, delays and hangs per tool, with a call log.
import type { Tool, ToolInput, ToolOutput } from '../define/tool.js';
import { implementationsFor, type ToolErrorResult, type ToolResultOf } from '../invokers/function.js';
import type { ToolCall, ToolInvoker } from '../invokers/types.js';

/** One scripted answer. */
export type MockAnswer = { ok: unknown; delayMs?: number } | { error: unknown; delayMs?: number } | { hang: true };

/** A scripted function: returns the output (or a promise of it); throw to fail. */
export type MockFunction = (input: any, call: ToolCall) => unknown;

/** What a tool answers: one answer, answers in order (the last repeats; functions allowed), or a function. */
export type MockScript = Record<string, MockAnswer | (MockAnswer | MockFunction)[] | MockFunction>;

/**
 * One scripted answer of tool `T`: its output (or an in-band error result), a thrown error, or a hang.
 *
 * @example
 * ```ts
 * const answer: TypedMockAnswer<typeof listTasks> = { ok: { tasks: [] }, delayMs: 50 };
 * ```
 */
export type TypedMockAnswer<T> =
  { ok: ToolOutput<T> | ToolErrorResult; delayMs?: number } | { error: unknown; delayMs?: number } | { hang: true };

/**
 * A scripted function of tool `T`: its input typed, returning its output (or a promise of it); throw to fail.
 *
 * @example
 * ```ts
 * const fn: TypedMockFunction<typeof listTasks> = ({ status }) => ({ tasks: status === 'completed' ? [] : [task] });
 * ```
 */
export type TypedMockFunction<T> = (input: ToolInput<T>, call: ToolCall) => ToolResultOf<T>;

/**
 * A script typed by `Tools`: only their names, each answer typed by its tool's schemas.
 *
 * @example
 * ```ts
 * const script: TypedMockScript<[typeof listTasks]> = {
 *   list_tasks: [{ error: new Error('busy') }, { ok: { tasks: [] } }],
 * };
 * ```
 */
export type TypedMockScript<Tools extends readonly Tool[]> = {
  [T in Tools[number] as T['name']]?:
    TypedMockAnswer<T> | TypedMockFunction<T> | (TypedMockAnswer<T> | TypedMockFunction<T>)[];
};

/** A call the mock received. */
export interface MockCall {
  tool: string;
  input: unknown;
  attempt: number;
  /** `Date.now()` when the call arrived (fake timers move it). */
  at: number;
  idempotencyKey?: string;
}

/** A mock invoker with its call log. */
export interface MockInvoker extends ToolInvoker {
  readonly calls: readonly MockCall[];
  /** The calls made to one tool, in order. */
  callsTo(tool: string): MockCall[];
  /** Clears the log and restarts every answer sequence. */
  reset(): void;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Creates a scripted invoker. Delays use `setTimeout`, so fake timers drive them; `{ hang: true }`
 * settles only when the call's signal aborts (with the abort reason). It serves the tools scripted:
 * a runner refuses a chain with another tool before its first step (a `DefinitionError`); a call
 * of an unscripted tool (`runner.invoke`) fails as `not_found`.
 *
 * @example
 * ```ts
 * const invoker = createMockInvoker({
 *   list_tasks: { ok: { tasks: [] } },
 *   delete_task: [{ error: Object.assign(new Error('busy'), { status: 503 }) }, { ok: { deleted: true } }],
 * });
 * ```
 */
export function createMockInvoker(script: MockScript): MockInvoker;
/**
 * Creates a scripted invoker typed by the tools: the script may only name those tools, and each
 * answer (`ok` values, functions' inputs and returns) is typed by its tool's schemas. It serves the
 * tools given (a runner refuses a chain with another before its first step); a call of one left
 * unscripted fails as `not_found`.
 *
 * @example
 * ```ts
 * const invoker = createMockInvoker([listTasks, deleteTask], {
 *   list_tasks: { ok: { tasks: [] } },
 *   delete_task: (input) => ({ task_id: input.task_id, title: 'Milk', deleted: true }),
 * });
 * ```
 */
export function createMockInvoker<const Tools extends readonly Tool[]>(
  tools: Tools,
  script: NoInfer<TypedMockScript<Tools>>,
): MockInvoker;
export function createMockInvoker(scriptOrTools: MockScript | readonly Tool[], typed?: object): MockInvoker {
  const script = implementationsFor(scriptOrTools, typed, 'script') as MockScript;
  if (typeof script !== 'object' || script === null)
    throw new TypeError('Expected a script object { [tool]: answer }.');
  const calls: MockCall[] = [];
  const position = new Map<string, number>();

  const invoker = (async (call: ToolCall) => {
    const entry: MockCall = { tool: call.tool, input: call.input, attempt: call.attempt, at: Date.now() };
    if (call.idempotencyKey !== undefined) entry.idempotencyKey = call.idempotencyKey;
    calls.push(entry);
    // a tool named `toString` is not scripted by Object
    const spec = Object.hasOwn(script, call.tool) ? script[call.tool] : undefined;
    if (spec === undefined)
      throw Object.assign(new Error(`No mock answer scripted for tool '${call.tool}'.`), { status: 404 });
    if (typeof spec === 'function') return spec(call.input, call);
    let answer: MockAnswer | MockFunction;
    if (Array.isArray(spec)) {
      if (spec.length === 0) throw new Error(`The mock script for '${call.tool}' is an empty array.`);
      const i = position.get(call.tool) ?? 0;
      position.set(call.tool, i + 1);
      answer = spec[Math.min(i, spec.length - 1)]!;
    } else {
      answer = spec;
    }
    if (typeof answer === 'function') return answer(call.input, call);
    if (typeof answer !== 'object' || answer === null || !('ok' in answer || 'error' in answer || 'hang' in answer)) {
      throw new TypeError(
        `Mock answer for '${call.tool}' must be { ok }, { error }, { hang: true } or a function; ` +
          `got ${JSON.stringify(answer)}.`,
      );
    }
    if ('hang' in answer) {
      return new Promise((_, reject) => {
        if (call.signal.aborted) reject(call.signal.reason);
        else call.signal.addEventListener('abort', () => reject(call.signal.reason), { once: true });
      });
    }
    if (answer.delayMs) await delay(answer.delayMs);
    if ('error' in answer) throw answer.error;
    return answer.ok;
  }) as MockInvoker;

  Object.defineProperty(invoker, 'calls', { get: () => calls });
  // The tools it stands in for (given, or else scripted): a
  // runner refuses a chain needing another before its first step.
  const served = Array.isArray(scriptOrTools)
    ? new Set((scriptOrTools as readonly Tool[]).map((t) => t.name))
    : undefined;
  invoker.serves = served ? (tool) => served.has(tool) : (tool) => Object.hasOwn(script, tool);
  invoker.callsTo = (tool) => calls.filter((c) => c.tool === tool);
  invoker.reset = () => {
    calls.length = 0;
    position.clear();
  };
  return invoker;
}
