// Who may see a run: `getRun`, `watch`, `cancel`, `signal` and `listRuns` with `{ context }` show a durable run
// only to the trusted context it was started with (docs/guides/watching-runs.md, "Only the user's own runs").
import type { Chain } from '../define/chain.js';
import { hashContext } from './checkpoint.js';
import { validateContext } from './prepare.js';
import type { RunContextMatch } from '../stores/run-listing.js';
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
 * What `listRuns({ context })` matches, as {@link startedWith} compares a run: for each chain this runner
 * knows (only `chain` when the listing names one), the hash its context schema gives `context`; for the
 * chains it does not know, the hash of `context` as given. Empty for a context that is nobody's (empty, or
 * throwing when read).
 *
 * @example
 * ```ts
 * const query = { ...listQuery(filter), contexts: contextMatchesOf(parts.chains, { userId }) };
 * ```
 */
export function contextMatchesOf(
  chains: ReadonlyMap<string, Chain>,
  context: object,
  chain?: string,
): RunContextMatch[] {
  const byHash = new Map<string, string[]>();
  try {
    const known = chain === undefined ? [...chains.values()] : chains.has(chain) ? [chains.get(chain)!] : [];
    for (const c of known) {
      const validated = validateContext(c, context);
      if (!validated.ok || !hasEntries(validated.value)) continue;
      const hash = hashContext(validated.value);
      const names = byHash.get(hash);
      if (names) names.push(c.name);
      else byHash.set(hash, [c.name]);
    }
    const matches: RunContextMatch[] = [...byHash].map(([hash, names]) => ({ hash, chains: names }));
    if (hasEntries(context)) {
      const raw = hashContext(context);
      if (chain !== undefined && !chains.has(chain)) matches.push({ hash: raw, chains: [chain] });
      else if (chain === undefined) matches.push({ hash: raw, except: [...chains.keys()] });
    }
    return matches;
  } catch {
    return [];
  }
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
