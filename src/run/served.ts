// Whether the invoker can run every tool of a chain (`ToolInvoker.serves`), checked before a run's first step.
import { isChain, type Chain } from '../define/chain.js';
import { DefinitionError, type DefinitionIssue } from '../errors/definition-error.js';
import type { ToolInvoker } from '../invokers/types.js';

/**
 * The names of the tools a chain calls: its steps' tools, their
 * `compensate` tools, and those of chains nested in its plan.
 */
function toolsOf(chain: Chain, into: Set<string>, seen: Set<Chain>): Set<string> {
  if (seen.has(chain)) return into;
  seen.add(chain);
  for (const step of chain.plan) {
    if (step.tool) into.add(step.tool.name);
    if (step.compensate) into.add(step.compensate.tool.name);
    // Step kinds that run other chains (chain, forEach, branch, loop) list them in `calls`.
    for (const call of step.calls ?? []) {
      if (isChain(call.chain)) toolsOf(call.chain, into, seen);
    }
  }
  return into;
}

/**
 * Checks chains against what the invoker serves: the issue for each chain with a tool it cannot
 * run (none when the invoker does not declare `serves`). Answers for one chain are kept.
 *
 * @example
 * ```ts
 * const served = servedCheck(invoker);
 * const issue = served(chain, 'chains[0]'); // { path, message } naming the tools, or undefined
 * ```
 */
export function servedCheck(invoker: ToolInvoker): (chain: Chain, path: string) => DefinitionIssue | undefined {
  const serves = typeof invoker.serves === 'function' ? invoker.serves.bind(invoker) : undefined;
  const missingOf = new WeakMap<Chain, readonly string[]>();
  return (chain, path) => {
    if (!serves) return undefined;
    let missing = missingOf.get(chain);
    if (!missing)
      missingOf.set(chain, (missing = [...toolsOf(chain, new Set(), new Set())].filter((name) => !serves(name))));
    if (missing.length === 0) return undefined;
    return {
      path,
      message:
        `Chain '${chain.name}' needs ${missing.length === 1 ? 'a tool' : 'tools'} the invoker does not serve: ` +
        `${missing.join(', ')}. ` +
        `Give the invoker ${missing.length === 1 ? 'its implementation' : 'their implementations'} ` +
        `(e.g. functionInvoker(tools, { ${missing[0]}: … })).`,
    };
  };
}

/**
 * The error for chains whose tools the invoker cannot run, or `undefined` when it can run them all.
 *
 * @example
 * ```ts
 * const error = unservedError(check, [[chain, 'chain']]);
 * if (error) return Promise.reject(error);
 * ```
 */
export function unservedError(
  check: ReturnType<typeof servedCheck>,
  chains: Iterable<readonly [Chain, string]>,
  subject = 'runner options',
): DefinitionError | undefined {
  const issues: DefinitionIssue[] = [];
  for (const [chain, path] of chains) {
    const issue = check(chain, path);
    if (issue) issues.push(issue);
  }
  return issues.length > 0 ? new DefinitionError(subject, issues) : undefined;
}
