// In-band error results (`{ status: 'error', error, message? }`): recognised, and classified like thrown errors.
import type { ErrorCategory } from './categories.js';
import {
  BUILT_IN,
  classifyError,
  DEFAULT_CLASSIFIERS,
  inBandCategory,
  isBag,
  wellFormed,
  wordsOf,
  type Bag,
} from './classify.js';
import type { Classified, Classifier } from './failure.js';
import { retryAfterOf } from './retry-after.js';

/**
 * Builds the failure for an in-band error result `{ status: 'error', error, message?, retry_after? }`.
 * Custom classifiers (a tool's, the runner's) see the result itself first: a domain names its own
 * codes. Then a code any service uses decides; else its message, else the words of its code (`user_not_found`).
 */
export function inBandFailure(result: Bag, classifiers: readonly Classifier[] = DEFAULT_CLASSIFIERS): Classified {
  const code = String(result.error);
  let text = code;
  let retryAfterMs: number | undefined;
  try {
    if (typeof result.message === 'string') text = result.message;
    retryAfterMs = retryAfterOf(result);
  } catch {
    // A getter that throws leaves the code as the only text.
  }
  let category: ErrorCategory | undefined;
  let userMessage: string | undefined;
  for (const classify of classifiers) {
    if (BUILT_IN.has(classify)) continue;
    try {
      const verdict = classify(result);
      if (wellFormed(verdict)) {
        category = verdict.category;
        retryAfterMs = verdict.retryAfterMs ?? retryAfterMs;
        if (typeof verdict.userMessage === 'string') userMessage = verdict.userMessage;
        break;
      }
    } catch {
      // as in classifyError: a broken classifier leaves the decision to the next one
    }
  }
  category ??= inBandCategory(code) ?? classifyError(new Error(text), classifiers).category;
  if (category === 'unknown') category = wordsOf(code) ?? 'unknown';
  return {
    category,
    code,
    message: `${code}: ${text}`,
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    ...(userMessage !== undefined && { userMessage }),
  };
}

/** Whether a tool output is an in-band error result. */
export function isInBandError(output: unknown): output is Bag {
  return isBag(output) && output.status === 'error' && typeof output.error === 'string';
}
