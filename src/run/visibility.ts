// Who may see a run: `getRun`, `watch`, `cancel`, `signal` and `listRuns` with `{ context }` show a durable run
// only to the trusted context it was started with (docs/guides/watching-runs.md, "Only the user's own runs").
import type { Chain } from '../define/chain.js';
import { hashContext } from './checkpoint.js';
import { validateContext } from './prepare.js';
import type { StoredRun } from '../stores/run-store.js';

/** Whether a stored run may be shown to the caller at hand (built by the runner's `shownBy(context)`). */
export type ShownTo = (run: StoredRun) => boolean;

/**
 * Whether a recorded run was started with `context`, as its chain's context schema gives it when this
 * runner knows the chain (else as given): what `getRun` and `watch` with `{ context }` show a run to.
 *
 * @example
 * ```ts
 * if (!startedWith(parts.chains, run, { userId })) return undefined;
 * ```
 */
export function startedWith(
  chains: ReadonlyMap<string, Chain>,
  run: { chain: string; contextHash?: string },
  context: object,
): boolean {
  if (run.contextHash === undefined) return false; // recorded before runs kept it: shown to no context
  try {
    const chain = chains.get(run.chain);
    const validated = chain ? validateContext(chain, context) : { ok: true as const, value: context };
    // An empty context is nobody's (a signed-out `{ userId: undefined }`): runs started without one are operators'.
    if (!validated.ok || !hasEntries(validated.value)) return false;
    return hashContext(validated.value) === run.contextHash;
  } catch {
    return false; // a context that throws when read or checked is nobody's, and says nothing of the run
  }
}

/**
 * The context hashes of the runs `listRuns({ context })` shows: `context` as each chain this runner knows
 * gives it (only `chain`'s when the listing names one), and as given for the chains it does not know, as
 * {@link startedWith} compares them. Empty for a context that is nobody's (empty, or throwing when read).
 *
 * @example
 * ```ts
 * const query = { ...listQuery(filter), contexts: contextHashes(parts.chains, { userId }) };
 * ```
 */
export function contextHashes(chains: ReadonlyMap<string, Chain>, context: object, chain?: string): string[] {
  const hashes = new Set<string>();
  const add = (value: object): void => {
    if (hasEntries(value)) hashes.add(hashContext(value));
  };
  try {
    const known = chain === undefined ? chains.values() : chains.has(chain) ? [chains.get(chain)!] : [];
    for (const c of known) {
      const validated = validateContext(c, context);
      if (validated.ok) add(validated.value);
    }
    if (chain === undefined || !chains.has(chain)) add(context);
  } catch {
    return [];
  }
  return [...hashes];
}

/**
 * The context `getRun`/`watch` show runs to: absent, an operator's view of every run. Given but no object is
 * refused, so that a signed-out `{ context: session?.context }` never turns into an operator's view.
 *
 * @example
 * ```ts
 * const context = shownTo({ context: { userId } }); // { userId }
 * ```
 */
export function shownTo(options: { context?: object }): object | undefined {
  if (!Object.hasOwn(options, 'context')) return undefined;
  const context: unknown = options.context;
  if (typeof context !== 'object' || context === null)
    throw new TypeError(
      "Expected `context` to be the trusted context runs are shown to (an object); leave it out for an operator's " +
        'view of every run.',
    );
  return context;
}

const hasEntries = (value: object): boolean => {
  for (const key in value) if ((value as Record<string, unknown>)[key] !== undefined) return true;
  return false;
};
