// A run's result as a model should see it: plain JSON with what happened and what to do next.
import type { ChainErrorInfo } from '../errors/categories.js';
import type { ResponseMetadata, RunResult } from '../observe/result.js';
import { maskError, secretMask } from '../observe/redact.js';

// The runner masked the error with the run's own secrets already; this pass catches `key=value`
// secrets in a result built or changed elsewhere. It copies: the caller's result stays as it was.
const PATTERN_MASK = secretMask(undefined);

/** A {@link RunResult} reduced to what an agent's model needs (no trace), JSON-safe. */
export type ModelResult =
  | { status: 'completed'; output: unknown; metadata: ResponseMetadata }
  | {
      status: 'awaiting_confirmation';
      resumeToken: string;
      prompt: string;
      step: string;
      tool: string;
      expiresAt: string;
      instructions: string;
      metadata: ResponseMetadata;
    }
  | { status: 'declined'; step: string; message: string; metadata: ResponseMetadata }
  | { status: 'failed'; error: ChainErrorInfo; compensated: string[]; metadata: ResponseMetadata }
  | { status: 'in_doubt'; step: string; tool: string; message: string; metadata: ResponseMetadata }
  | { status: 'waiting'; step: string; until?: string; signal?: string; message: string; metadata: ResponseMetadata };

/** Options of {@link toModelResult}. */
export interface ModelResultOptions {
  /** How the model answers a gate, e.g. "call confirm_action with …". Default: a generic sentence. */
  howToConfirm?: string;
}

/**
 * Turns a run result into the JSON an agent's model reads: the output, the gate's question with
 * its resume token and instructions, or the error with its user message and suggestions. Used by
 * `chainkit/mcp` and the agent-framework tools; use it for your own tool-calling loop too.
 *
 * @example
 * ```ts
 * const result = await runner.run(findAndDelete, { match: 'milk' }, { context });
 * messages.push({ role: 'tool', content: JSON.stringify(toModelResult(result)) });
 * ```
 */
export function toModelResult(result: RunResult, options: ModelResultOptions = {}): ModelResult {
  switch (result.status) {
    case 'completed':
      return { status: 'completed', output: result.output, metadata: result.metadata };
    case 'awaiting_confirmation': {
      const { prompt, step, tool, expiresAt } = result.confirmation;
      const instructions =
        options.howToConfirm ??
        'Ask the user this question and do not go on until they answer; ' +
          'then resume with the resume token and their decision.';
      return {
        status: 'awaiting_confirmation',
        resumeToken: result.resumeToken,
        prompt,
        step,
        tool,
        expiresAt,
        instructions,
        metadata: result.metadata,
      };
    }
    case 'declined':
      return {
        status: 'declined',
        step: result.step,
        message: 'The user declined; nothing more was done.',
        metadata: result.metadata,
      };
    case 'failed':
      return {
        status: 'failed',
        error: maskError({ ...result.error }, PATTERN_MASK),
        compensated: result.compensated,
        metadata: result.metadata,
      };
    case 'in_doubt':
      return {
        status: 'in_doubt',
        step: result.step,
        tool: result.inDoubt[0]?.tool ?? '',
        message:
          'A step that changes data was interrupted and may or may not have taken effect; ' +
          'an operator must check it before the run goes on. Do not repeat it yourself.',
        metadata: result.metadata,
      };
    case 'waiting': {
      const { step, until, signal } = result.waiting;
      const when = until !== undefined ? new Date(until).toISOString() : undefined;
      const message =
        signal !== undefined
          ? `The run is waiting for '${signal}'${when ? ` until ${when}` : ''}; ` +
            'it goes on by itself once that arrives. Do not start it again.'
          : `The run is paused until ${when}; it goes on by itself. Do not start it again.`;
      return {
        status: 'waiting',
        step,
        ...(when !== undefined && { until: when }),
        ...(signal !== undefined && { signal }),
        message,
        metadata: result.metadata,
      };
    }
  }
}

/** One line of text for a model, for transports that want text beside the JSON. */
export function modelSummary(result: ModelResult): string {
  switch (result.status) {
    case 'completed':
      return JSON.stringify(result.output) ?? 'null';
    case 'awaiting_confirmation':
      return `${result.prompt}\n${result.instructions}`;
    case 'declined':
      return result.message;
    case 'in_doubt':
      return result.message;
    case 'waiting':
      return result.message;
    case 'failed':
      return [result.error.userMessage, ...result.error.suggestions].join('\n');
  }
}
