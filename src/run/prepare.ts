// What comes before a run's first step: its input and context checked, or a resume token verified
// and its checkpoint taken. The answer is the execution to run, or a result decided already.
import type { Chain } from '../define/chain.js';
import { parseSchema } from '../define/schema.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { RunResult } from '../observe/result.js';
import { callStore } from '../stores/guard.js';
import type { JournalEntry } from '../stores/run-store.js';
import type { Checkpoint, TakeResult } from '../stores/types.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { hashContext, verifyToken } from './checkpoint.js';
import { INVALID_RUN_ID, isValidRunId } from './run-id.js';
import { earlyFailure, earlyResult, type EarlySite } from './early-result.js';
import { iso, type Execution } from './execution.js';
import { newId } from './ids.js';
import { nestUnder } from './journal.js';
import type { RunnerParts } from './parts.js';
import { schemaFailure } from './pipeline.js';
import { keepsNested } from './keeps-nested.js';
import type { ResumeOptions, RunOptions } from './types.js';
import { nullRecord } from '../util/record.js';

/** Nothing done before: shared by every fresh run (a new empty array each would be kept per run in flight). */
const NONE: readonly never[] = Object.freeze([]);

/**
 * @internal A run option of the agent adapters: the framework already parsed the input with the chain's
 * own input schema (the MCP SDK, the AI SDK and OpenAI Agents each do, and hand the tool what it gave),
 * so the run takes it as parsed and a transform in the schema runs once. A symbol, so that no options
 * read from JSON carry it; `Symbol.for`, so that two copies of chainkit agree on it.
 *
 * @example
 * ```ts
 * const options: ParsedInputOptions<Ctx> = { [INPUT_PARSED]: true, context };
 * await runner.run(chain, frameworkParsedInput, options);
 * ```
 */
export const INPUT_PARSED: unique symbol = Symbol.for('chainkit.inputParsed') as never;

/**
 * @internal `stream`'s run option: told whether the run store took the run id as this caller's run (a new run,
 * or its own recorded one: same chain and context) or refused it (`run_id_taken`), before its events are read.
 */
export const ON_RECORDED: unique symbol = Symbol('chainkit.onRecorded') as never;

/** @internal Run options with {@link INPUT_PARSED} or {@link ON_RECORDED}. */
export interface ParsedInputOptions<C> extends RunOptions<C> {
  [INPUT_PARSED]?: true;
  [ON_RECORDED]?: (ours: boolean | 'joined') => void;
}

/**
 * A fresh run of `chain`: its execution, or a failed result for input or context that do not match
 * the chain's schemas. Throws only on input or options that cannot be read.
 *
 * @example
 * ```ts
 * const prepared = prepareRun(parts, chain, input, { context });
 * return 'status' in prepared ? prepared : execute(parts, prepared);
 * ```
 */
export function prepareRun(
  parts: RunnerParts,
  chain: Chain,
  input: unknown,
  opts: RunOptions<unknown>,
): Execution | RunResult {
  const { calls } = parts;
  parts.chains.set(chain.name, chain); // one definition per name: the latest run wins for resume
  const given: unknown = opts.runId;
  const traceId = newId();
  // Checked before anything reads it as text or a store is asked: an object's (or a throwing) toString is never called.
  if (given !== undefined && !isValidRunId(given)) {
    return earlyResult(
      parts,
      earlySite(chain, newId(), traceId, opts, calls.now()),
      earlyFailure(calls, 'invalid_input', 'invalid_run_id', INVALID_RUN_ID),
    );
  }
  const runId = (given as string | undefined) ?? newId();
  const parsed =
    (opts as ParsedInputOptions<unknown>)[INPUT_PARSED] === true
      ? { success: true as const, data: input }
      : parseSchema(chain.input, input);
  if (!parsed.success) {
    const f = schemaFailure(
      'invalid_input',
      `The input does not match chain ${chain.name}'s input schema`,
      parsed.error.issues,
      'invalid_input',
    );
    const body = earlyFailure(calls, 'invalid_input', 'invalid_input', f.message);
    (body.error as ChainErrorInfo & { issues?: unknown }).issues = parsed.error.issues.map((i) => ({
      path: i.path.map(String),
      message: i.message,
    }));
    return earlyResult(parts, earlySite(chain, runId, traceId, opts, calls.now()), body);
  }
  const context = validateContext(chain, opts.context);
  if (!context.ok) {
    return earlyResult(
      parts,
      earlySite(chain, runId, traceId, opts, calls.now()),
      earlyFailure(
        calls,
        'invalid_input',
        'invalid_context',
        context.message,
        'Your session could not be verified. Please sign in again.',
      ),
    );
  }
  return {
    // Step ids come from definitions but are looked up by name: results keep no prototype.
    chain,
    runId,
    traceId,
    input: parsed.data,
    context: context.value,
    results: nullRecord<unknown>(),
    done: NONE,
    priorTrace: NONE,
    startedAt: calls.now(),
    resumed: false,
    ...(keepsNested(chain) && { kept: [] }),
    ...(opts.sessionId !== undefined && { sessionId: opts.sessionId }),
    ...(opts.confirm && { confirm: opts.confirm }),
    ...(opts.signal && { signal: opts.signal }),
    ...((opts as ParsedInputOptions<unknown>)[ON_RECORDED] && {
      recorded: (opts as ParsedInputOptions<unknown>)[ON_RECORDED],
    }),
  };
}

/**
 * The execution after an approved gate, or the result of a refused or declined resume. The
 * resumed segment's deadline counts from the call, store reads included.
 *
 * @example
 * ```ts
 * const prepared = await prepareResume(parts, token, { approved: true }, {});
 * return 'status' in prepared ? prepared : execute(parts, prepared);
 * ```
 */
export async function prepareResume(
  parts: RunnerParts,
  token: string,
  decision: { approved: boolean; by?: string },
  opts: ResumeOptions,
): Promise<Execution | RunResult> {
  const { calls, gates } = parts;
  const { now } = calls;
  const traceId = newId();
  const resumeStart = now();
  // Until the checkpoint names its chain, the reads are bounded by the chain given (or the longest known one).
  let waitUntil = resumeStart + Math.min(STORE_WAIT_MS, resumeBudget(parts, opts.chain));
  const refuse = (
    code: string,
    message: string,
    cp?: { chain: string; runId: string; sessionId?: string },
  ): RunResult =>
    earlyResult(
      parts,
      { chain: cp?.chain ?? '', runId: cp?.runId ?? '', traceId, sessionId: cp?.sessionId },
      earlyFailure(calls, 'confirmation', code, message),
    );

  const verified = verifyToken(token, gates.secret, now());
  if ('problem' in verified) {
    return refuse(
      verified.problem,
      verified.problem === 'expired'
        ? 'The resume token has expired.'
        : 'The resume token is not valid (tampered, truncated or from another deployment).',
    );
  }
  // Check the request against the checkpoint first, then take it atomically: a refused request
  // never touches it, so it cannot get in the way of the rightful resume.
  const read = async (op: 'peek' | 'take'): Promise<Checkpoint | RunResult> => {
    let found: TakeResult;
    try {
      found = await callStore(() => gates.checkpoints[op](verified.id), waitUntil, now, 'checkpoint');
    } catch (error) {
      return earlyResult(
        parts,
        { chain: '', runId: '', traceId, sessionId: undefined },
        earlyFailure(calls, 'unavailable', 'store_unavailable', error instanceof Error ? error.message : String(error)),
      );
    }
    if (found.status === 'used') return refuse('already_used', 'This resume token has already been used.');
    if (found.status === 'missing') return refuse('invalid_token', 'No checkpoint exists for this resume token.');
    return found.checkpoint;
  };
  const peeked = await read('peek');
  if ('status' in peeked) return peeked;
  const given = opts.chain;
  // A list given is the only chains the token may be for (a server serving some chains resumes no other).
  const chain: Chain | undefined = Array.isArray(given)
    ? (given as readonly Chain[]).find((c) => c.name === peeked.chain)
    : ((given as Chain | undefined) ?? parts.chains.get(peeked.chain));
  if (!chain || chain.name !== peeked.chain)
    return refuse(
      'unknown_chain',
      `This runner has no chain named '${peeked.chain}'; pass it in \`chains\` or \`resume(..., { chain })\`.`,
      peeked,
    );
  waitUntil = resumeStart + chain.timeoutMs;
  if (chain.fingerprint !== peeked.fingerprint)
    return refuse(
      'chain_changed',
      `Chain ${peeked.chain} changed since the token was issued; start the action again.`,
      peeked,
    );
  const context = validateContext(chain, opts.context);
  if (!context.ok || hashContext(context.value) !== peeked.contextHash)
    return refuse(
      'context_mismatch',
      'The resume was attempted with a different trusted context than the original run.',
      peeked,
    );
  const cp = await read('take');
  if ('status' in cp) return cp;
  const site = {
    chain: chain.name,
    runId: cp.runId,
    traceId: cp.traceId,
    sessionId: cp.sessionId,
    definition: chain,
    startedAt: cp.startedAt,
  };
  if (!decision.approved) {
    // A gate inside a sub-chain (`done/3/delete`) is shown on the step that ran it.
    const top = cp.gate.split('/', 1)[0];
    const gate = chain.plan.find((step) => step.id === top);
    const declined = {
      stepNumber: (gate?.index ?? -1) + 1,
      id: cp.gate,
      status: 'declined' as const,
      attempts: 0,
      latencyMs: 0,
      startedAt: iso(now()),
      ...(gate?.tool && { tool: gate.tool.name }),
      ...(decision.by !== undefined && { decidedBy: decision.by }),
    };
    return earlyResult(parts, { ...site, priorTrace: [...cp.trace, declined] }, { status: 'declined', step: cp.gate });
  }
  return {
    chain,
    runId: cp.runId,
    traceId: cp.traceId,
    input: cp.input,
    context: context.value,
    results: Object.assign(nullRecord<unknown>(), cp.results),
    done: cp.done,
    priorTrace: cp.trace,
    startedAt: cp.startedAt,
    approvedGate: cp.gate,
    resumed: true,
    segmentStart: resumeStart,
    ...nestedFrom(cp, chain),
    ...(cp.generations !== undefined && { generations: new Map(Object.entries(cp.generations)) }),
    ...(cp.sessionId !== undefined && { sessionId: cp.sessionId }),
    ...(decision.by !== undefined && { decidedBy: decision.by }),
    ...(opts.signal && { signal: opts.signal }),
  };
}

function earlySite(
  chain: Chain,
  runId: string,
  traceId: string,
  opts: RunOptions<unknown>,
  startedAt: number,
): EarlySite {
  return { chain: chain.name, runId, traceId, sessionId: opts.sessionId, definition: chain, startedAt };
}

/** How long a resume may wait for the checkpoint store before its chain is known. */
function resumeBudget(parts: RunnerParts, given: ResumeOptions['chain']): number {
  if (given !== undefined && !Array.isArray(given)) return (given as Chain).timeoutMs;
  let longest = 0;
  for (const c of Array.isArray(given) ? (given as readonly Chain[]) : parts.chains.values())
    longest = Math.max(longest, c.timeoutMs);
  return longest > 0 ? longest : STORE_WAIT_MS;
}

/** The context as the chain's context schema gives it (a run's, or one a request is shown runs to). */
export function validateContext(
  chain: Chain,
  context: unknown,
): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  if (!chain.context) return { ok: true, value: (context ?? {}) as Record<string, unknown> };
  const parsed = parseSchema(chain.context, context ?? {});
  if (parsed.success) return { ok: true, value: parsed.data as Record<string, unknown> };
  return {
    ok: false,
    message: schemaFailure(
      'invalid_context',
      `The context does not match chain ${chain.name}'s context schema`,
      parsed.error.issues,
    ).message,
  };
}

/**
 * A resume of a run with sub-chains: what they finished before the gate, by prefix, and kept again for a later gate.
 */
function nestedFrom(cp: Checkpoint, chain: Chain): Pick<Execution, 'priorNested' | 'kept'> {
  if (!keepsNested(chain)) return {};
  const kept: JournalEntry[] = cp.nested ? [...cp.nested] : [];
  if (kept.length === 0) return { kept };
  const priorNested = new Map<string, JournalEntry[]>();
  for (const entry of kept) nestUnder(priorNested, entry);
  return { kept, priorNested };
}
