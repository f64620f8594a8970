// Plain, actionable words for end users and agents, per category; never internals.
import {
  DEFAULT_RETRY_TABLE,
  isRetryableCategory,
  type ChainErrorInfo,
  type ErrorCategory,
  type RetryTable,
} from './categories.js';
import type { Classified } from './failure.js';

interface Wording {
  user: string;
  suggestions: string[];
}

const WORDING: Record<ErrorCategory, Wording> = {
  invalid_input: {
    user: 'Some of the information given is missing or not in the expected form.',
    suggestions: [
      'Check the input against the tool or chain schema and try again.',
      'Ask the user for the missing or malformed value.',
    ],
  },
  validation: {
    user: 'A step produced data in an unexpected shape, so the action was stopped.',
    suggestions: [
      'Check that the tool returns what its output schema declares.',
      'Report this to the developer; retrying will not help.',
    ],
  },
  not_found: {
    user: "I couldn't find what you asked for.",
    suggestions: ['Check the name or id and try again.', 'List the available items first and pick one.'],
  },
  ambiguous: {
    user: 'More than one item matches. Which one did you mean?',
    suggestions: ['Ask the user to choose one of the candidates.', 'Use a more specific description.'],
  },
  permission_denied: {
    user: "You don't have permission to do that.",
    suggestions: ['Check that the item belongs to the current user.', 'Ask an administrator for access.'],
  },
  authentication_required: {
    user: 'Please sign in again to continue.',
    suggestions: ['Refresh the credentials and retry.'],
  },
  conflict: {
    user: 'That item was changed by someone else in the meantime.',
    suggestions: ['Reload the item and try again.'],
  },
  rate_limited: {
    user: 'Too many requests right now. Please try again shortly.',
    suggestions: ['Wait for the time given in retryAfterMs, then retry.', 'Batch or reduce the number of calls.'],
  },
  timeout: {
    user: 'That took too long and was stopped.',
    suggestions: ['Try again; the service may be slow right now.', 'Narrow the request so it needs less work.'],
  },
  unavailable: {
    user: 'The service is temporarily unavailable. Please try again in a moment.',
    suggestions: ['Retry later.', 'Check the status of the downstream service.'],
  },
  internal: {
    user: 'Something went wrong on our side. Please try again.',
    suggestions: ['Retry; internal errors are often transient.', 'If it keeps failing, report it with the run id.'],
  },
  network: {
    user: 'A network problem stopped the action. Please try again.',
    suggestions: ['Retry; the connection may have dropped.', 'Check that the service address is reachable.'],
  },
  circuit_open: {
    user: 'This feature is temporarily switched off after repeated failures. Please try again later.',
    suggestions: ['Wait for retryAfterMs before calling this tool again.', 'Use an alternative tool if there is one.'],
  },
  queue_full: {
    user: 'The system is busy right now. Please try again shortly.',
    suggestions: ['Retry after a short pause.', 'Reduce concurrent requests.'],
  },
  cancelled: {
    user: 'The action was cancelled.',
    suggestions: ['Start it again if it is still wanted.'],
  },
  confirmation: {
    user: 'This confirmation is no longer valid.',
    suggestions: ['Start the action again to get a new confirmation.'],
  },
  unknown: {
    user: 'Something unexpected went wrong.',
    suggestions: ['Retry once; if it fails again, report it with the run id.'],
  },
};

// Own keys only: a custom classifier's category `constructor` must not find Object's own.
const wordingOf = (category: ErrorCategory): Wording =>
  Object.hasOwn(WORDING, category) ? WORDING[category] : WORDING.unknown;

/**
 * The default end-user message for a category; a rate limit with a known wait says how many
 * seconds to wait (rounded up).
 *
 * @example
 * ```ts
 * userMessageFor('rate_limited', 7000); // 'Too many requests right now. Please wait 7 seconds and try again.'
 * ```
 */
function userMessageFor(category: ErrorCategory, retryAfterMs?: number): string {
  if (category === 'rate_limited' && retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return `Too many requests right now. Please wait ${seconds} ${seconds === 1 ? 'second' : 'seconds'} and try again.`;
  }
  return wordingOf(category).user;
}

// A domain's own words are shown to end users: never a stack frame, whatever a classifier returned.
const STACK_FRAME = /\n\s*at .*/g;
const userText = (text: string): string => text.replace(STACK_FRAME, '').trim();

/** Default recovery suggestions for a category (a fresh array the caller may keep). */
function suggestionsFor(category: ErrorCategory): string[] {
  return wordingOf(category).suggestions.slice();
}

/** Wording for a write whose outcome is unknown (timed out or cut off mid-call, not retried). */
const OUTCOME_UNKNOWN: Wording = {
  user: 'The action was interrupted, and it is not known whether it took effect. Please check before trying again.',
  suggestions: [
    'Check whether the action took effect (read or list the item) before trying it again.',
    'Do not repeat the action blindly: it may already have happened.',
  ],
};

/** Where a failure happened and what was tried; merged into the error info. */
export interface FailureDetails {
  step?: string;
  tool?: string;
  attempts?: number;
  candidates?: unknown[];
  userMessage?: string;
}

/**
 * Builds the {@link ChainErrorInfo} a result carries from a classified failure.
 *
 * @example
 * ```ts
 * toErrorInfo({ category: 'not_found', code: 'no_match', message: 'No task matches' }, { step: 'target' });
 * ```
 */
export function toErrorInfo(
  failure: Classified,
  details: FailureDetails = {},
  table: Readonly<RetryTable> = DEFAULT_RETRY_TABLE,
): ChainErrorInfo {
  // A category outside the vocabulary (from a custom classifier) is reported as `unknown`.
  const category = Object.hasOwn(WORDING, failure.category) ? failure.category : 'unknown';
  const info: ChainErrorInfo = {
    category,
    code: failure.code,
    message: failure.message,
    userMessage:
      details.userMessage ??
      (typeof failure.userMessage === 'string'
        ? userText(failure.userMessage)
        : userMessageFor(category, failure.retryAfterMs)),
    suggestions: suggestionsFor(category),
    alternatives: [],
    retryable: isRetryableCategory(category, table),
    attempts: details.attempts ?? 0,
  };
  if (failure.outcomeUnknown) {
    // A write that may have taken effect: "try again" could do it twice.
    info.retryable = false;
    if (details.userMessage === undefined && failure.userMessage === undefined) info.userMessage = OUTCOME_UNKNOWN.user;
    info.suggestions = OUTCOME_UNKNOWN.suggestions.slice();
  }
  if (failure.retryAfterMs !== undefined) info.retryAfterMs = failure.retryAfterMs;
  if (details.step !== undefined) info.step = details.step;
  if (details.tool !== undefined) info.tool = details.tool;
  if (details.candidates !== undefined) info.candidates = details.candidates;
  return info;
}
