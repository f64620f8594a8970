// A chain's preconditions, checked before its first step: the first that does not hold (or throws) ends
// the run before anything is called.
import type { Scope } from '../define/ref.js';
import type { Precondition } from '../define/spec.js';
import type { ChainErrorInfo, RetryTable } from '../errors/categories.js';
import type { Classified } from '../errors/failure.js';
import { toErrorInfo } from '../errors/messages.js';
import { describeThrown } from './execution.js';

/**
 * The failure of the first precondition that does not hold in `scope` (`precondition_failed`, its
 * message shown to the user) or throws (`precondition_error`); `undefined` when all hold.
 *
 * @example
 * ```ts
 * const error = preconditionFailure(chain.preconditions, scope, retryTable);
 * if (error) return { kind: 'failed', error };
 * ```
 */
export function preconditionFailure(
  preconditions: readonly Precondition<Scope>[],
  scope: Scope,
  retryTable: Readonly<RetryTable>,
): ChainErrorInfo | undefined {
  for (const pre of preconditions) {
    let failure: Classified | undefined;
    try {
      if (pre.check(scope) !== true)
        failure = {
          category: 'invalid_input',
          code: 'precondition_failed',
          message: `Precondition failed: ${pre.message}`,
        };
    } catch (error) {
      failure = {
        category: 'internal',
        code: 'precondition_error',
        message: `A precondition threw: ${describeThrown(error)}`,
      };
    }
    if (failure) {
      const details = failure.code === 'precondition_failed' ? { userMessage: pre.message } : {};
      return toErrorInfo(failure, details, retryTable);
    }
  }
  return undefined;
}
