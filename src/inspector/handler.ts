// The inspector's request handler: routes under `basePath`, authorization of every request, the
// CSRF check of actions; its answers (http.ts) and live streams (live.ts) are built beside it.
import type { RedactRule } from '../util/redact.js';
import type { Runner } from '../run/runner-api.js';
import { lastEventId, SSE_HEADERS, toSSE } from '../sse/index.js';
import { RUN_STATUSES } from '../stores/run-list.js';
import { isValidRunId } from '../run/run-id.js';
import type { RunStatus, RunSummary } from '../stores/run-listing.js';
import { APP_CSS, APP_JS } from './assets.js';
import { checkCsrf, cookieNonce, CSRF_HEADER, csrfCookie, csrfToken, newNonce } from './csrf.js';
import { crossSite, json, problem, readBody, respond } from './http.js';
import { LiveHub, liveStream, mapped } from './live.js';
import { pageHtml } from './page.js';
import { eventView, learnedView, runView, safeWith, summaryView, type Safe } from './views.js';

/** What a request asks to do: read (every GET), or one of the actions (a POST). */
export type InspectorAction = 'read' | 'decide' | 'cancel' | 'signal' | 'rerun';

/** Options of `inspector(runner, options)`. */
export interface InspectorOptions {
  /**
   * Where the inspector is mounted, e.g. `'/ops/chains'` (requests
   * outside it get a 404 and, through `toNodeHandler`, go to `next`).
   */
  basePath: string;
  /**
   * Called for every request, with what it asks to do; required. `true` lets it through; `false`
   * answers 403 with no data; a `Response` is sent as it is (a 401 with `WWW-Authenticate`, a
   * redirect to your login page). A throw answers 500, with no data.
   */
  authorize: (request: Request, action: InspectorAction) => boolean | Response | Promise<boolean | Response>;
  /** Shows runs, refuses every action (the buttons are not shown). Default `false`. */
  readOnly?: boolean;
  /**
   * Who decides a gate through the page (`decide`'s `by`, kept on the trace). Default `'inspector'`.
   */
  actor?: (request: Request) => string | Promise<string>;
  /**
   * The secret the anti-CSRF tokens are signed with. Default: random per handler. Give one shared
   * secret when several instances serve the page behind one address (a token from one then holds on all).
   */
  csrfSecret?: string;
  /** The `redact` rule given to `createRunner` (more keys to hide), applied to everything the page gets. */
  redact?: RedactRule;
  /**
   * Shows identity keys (user ids, emails) as `createRunner({ traceIdentity: true })` does in traces. Default `false`.
   */
  traceIdentity?: boolean;
}

/** A web-standard handler: `(request) => Promise<Response>`. */
export type InspectorHandler = (request: Request) => Promise<Response>;

/** The event streams' headers: `no-store` as on every other answer, `no-transform` so no proxy buffers them. */
const SSE: Readonly<Record<string, string>> = { ...SSE_HEADERS, 'cache-control': 'no-store, no-transform' };

/**
 * An event stream's answer; to HEAD, its headers only: a stream made for it would hold a watch or a
 * live page that no client ever closes.
 */
function eventStream(method: string, open: () => ReadableStream<Uint8Array>): Response {
  return respond(method === 'HEAD' ? null : open(), 200, SSE_HEADERS['content-type'], SSE);
}

/** Where each inspector handler is mounted: `toNodeHandler` sends a request outside it to `next` untouched. */
export const basePaths = new WeakMap<InspectorHandler, string>();

/** Responses for requests outside `basePath`: `toNodeHandler` passes them to `next`. */
export const outside = new WeakSet<Response>();

/** Whether `path` is `base` or under it (`base` normalized: `''` is the root, so every path). */
export function inBase(path: string, base: string): boolean {
  return path === base || path.startsWith(`${base}/`);
}

/** `basePath` checked and normalized: starts with `/`, no trailing `/` (`''` for the root). */
function normalizeBase(basePath: unknown): string {
  if (typeof basePath !== 'string' || !basePath.startsWith('/') || /[?#\s]/.test(basePath))
    throw new TypeError("Expected `basePath` to be a path starting with '/', e.g. '/ops/chains'.");
  return basePath.replace(/\/+$/, '');
}

/**
 * Builds the handler (see `inspector` in index.ts for the documented entry).
 *
 * @example
 * ```ts
 * const handle = createInspector(runner, { basePath: '/ops/chains', authorize: () => true });
 * ```
 */
export function createInspector(
  runner: Runner,
  options: InspectorOptions,
): InspectorHandler & { readonly openPages: number } {
  if (typeof runner !== 'object' || runner === null || typeof runner.listRuns !== 'function')
    throw new TypeError('Expected a runner made by createRunner().');
  if (typeof options !== 'object' || options === null)
    throw new TypeError('Expected inspector options { basePath, authorize }.');
  if (typeof options.authorize !== 'function') {
    throw new TypeError(
      'The inspector needs `authorize(request, action)`: it shows runs and acts on them, ' +
        'so it refuses to be built without a check of who asks (return true to let a request through).',
    );
  }
  const base = normalizeBase(options.basePath);
  const readOnly = options.readOnly === true;
  const secret = options.csrfSecret ?? newNonce() + newNonce();
  if (typeof secret !== 'string' || secret.length < 16)
    throw new TypeError('Expected `csrfSecret` to be a string of at least 16 characters.');
  const safe: Safe = safeWith(options.redact, options.traceIdentity === true);
  const hub = new LiveHub(runner);
  const html = (token: string): string => pageHtml(base, token);

  const capabilities = () => ({ readOnly, signal: !readOnly, rerun: !readOnly && typeof runner.rerun === 'function' });

  async function overview(url: URL): Promise<Response> {
    const status = url.searchParams.get('status');
    const chain = url.searchParams.get('chain');
    const cursor = url.searchParams.get('cursor');
    const filter = {
      ...(status && RUN_STATUSES.includes(status as RunStatus) && { status: status as RunStatus }),
      ...(chain && { chain }),
      ...(cursor && { cursor }),
      limit: 50,
    };
    // Counts over the newest 1 000 runs (one indexed page): the page says when there are more.
    const [sample, inbox, page] = await Promise.all([
      runner.listRuns({ limit: 1_000 }),
      runner.listRuns({ status: 'awaiting_confirmation', limit: 100 }),
      runner.listRuns(filter),
    ]);
    const byStatus: Record<string, number> = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0]));
    const byChain: Record<string, Record<string, number>> = {};
    for (const r of sample.runs) {
      byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
      const row = (byChain[r.chain] ??= { total: 0 });
      row.total = (row.total ?? 0) + 1;
      row[r.status] = (row[r.status] ?? 0) + 1;
    }
    const view = (runs: RunSummary[]) => runs.map((r) => summaryView(r, safe));
    return json({
      capabilities: capabilities(),
      // Counts keyed by chain names: nothing to mask (a key-based mask would hide a chain named `password_reset`).
      counts: { byStatus, byChain, sampled: sample.runs.length, more: sample.cursor !== undefined },
      inbox: view(inbox.runs),
      runs: view(page.runs),
      ...(page.cursor !== undefined && { cursor: page.cursor }),
      breakers: [...hub.breakers.values()].map((b) => safe(b)),
      rateLimits: [...hub.limits.values()].map((l) => safe(l)),
      learned: learnedView(runner, safe),
    });
  }

  async function act(request: Request, body: Record<string, unknown>, action: InspectorAction): Promise<Response> {
    const runId = body.runId;
    if (!isValidRunId(runId)) return problem(400, 'Expected `runId`.');
    switch (action) {
      case 'decide': {
        if (typeof body.approved !== 'boolean') return problem(400, 'Expected `approved`: true or false.');
        const by = options.actor ? await options.actor(request) : 'inspector';
        const r = await runner.decide(runId, {
          approved: body.approved,
          by: typeof by === 'string' && by !== '' ? by.slice(0, 255) : 'inspector',
        });
        if (r === 'not_found') return problem(404, 'No such run.');
        if (r === 'not_parked') return json({ outcome: 'not_parked' }, 409);
        if (r.status === 'failed' && r.error.category === 'confirmation') return json({ outcome: r.error.code }, 409);
        return json({ outcome: 'decided', status: r.status });
      }
      case 'cancel': {
        const r = await runner.cancel(runId, { reason: 'cancelled from the inspector' });
        return json({ outcome: r }, r === 'not_found' ? 404 : 200);
      }
      case 'rerun': {
        const r = await runner.rerun(runId);
        if (typeof r === 'string') return json({ outcome: r }, r === 'not_found' ? 404 : 409);
        r.result.catch(() => undefined); // the run's own result: watched on the page, not here
        return json({ outcome: 'started', runId: r.runId, rerunOf: r.rerunOf });
      }
      case 'signal': {
        if (typeof body.name !== 'string' || body.name === '' || body.name.length > 255)
          return problem(400, 'Expected `name`: the signal to send.');
        // A payload the step's schema refuses (runner.signal's
        // SignalRefused) is the sender's mistake: the run keeps waiting.
        const r = await runner
          .signal(runId, body.name, body.payload)
          .catch((e: unknown) =>
            (e as { code?: unknown })?.code === 'invalid_signal' ? (e as Error) : Promise.reject(e),
          );
        if (r instanceof Error) return problem(400, r.message);
        return json({ outcome: typeof r === 'string' ? r : 'sent' });
      }
      default:
        return problem(400, 'Unknown action.');
    }
  }

  async function route(request: Request, url: URL, path: string): Promise<Response> {
    const method = request.method.toUpperCase();
    if (method === 'POST' && path === '/api/action') {
      // Read once, before authorize: authorize gets the action it is asked about.
      const body = await readBody(request.clone());
      const action = body?.action;
      if (action !== 'decide' && action !== 'cancel' && action !== 'signal' && action !== 'rerun') {
        const denied = await authorized(request, 'read');
        return (
          denied ?? problem(400, 'Expected a JSON body { action: "decide" | "cancel" | "signal" | "rerun", runId }.')
        );
      }
      const denied = await authorized(request, action);
      if (denied) return denied;
      if (
        crossSite(request, url) ||
        !checkCsrf(secret, request.headers.get(CSRF_HEADER), request.headers.get('cookie'))
      )
        return problem(403, 'Missing or invalid anti-CSRF token: reload the page.');
      if (readOnly) return problem(403, 'This inspector is read-only.');
      try {
        return await act(request, body!, action);
      } catch (error) {
        return problem(error instanceof TypeError ? 400 : 500, 'The action failed.');
      }
    }
    if (method !== 'GET' && method !== 'HEAD') {
      const denied = await authorized(request, 'read');
      return denied ?? respond(null, 405, undefined, { allow: 'GET, HEAD, POST' });
    }
    const denied = await authorized(request, 'read');
    if (denied) return denied;
    switch (path) {
      case '':
      case '/': {
        const existing = cookieNonce(request.headers.get('cookie'));
        const nonce = existing ?? newNonce();
        const extra: Record<string, string> = existing
          ? {}
          : { 'set-cookie': csrfCookie(nonce, base, url.protocol === 'https:') };
        return respond(html(csrfToken(secret, nonce)), 200, 'text/html; charset=utf-8', extra);
      }
      case '/app.js':
        return respond(APP_JS, 200, 'text/javascript; charset=utf-8');
      case '/app.css':
        return respond(APP_CSS, 200, 'text/css; charset=utf-8');
      case '/api/overview':
        return overview(url);
      case '/api/run': {
        const id = url.searchParams.get('id');
        if (!isValidRunId(id)) return problem(400, 'Expected ?id=<runId>.');
        const info = await runner.getRun(id);
        if (!info) return problem(404, 'No such run.');
        return json({ capabilities: capabilities(), run: runView(info, safe) });
      }
      case '/api/events': {
        const id = url.searchParams.get('id');
        if (!isValidRunId(id)) return problem(400, 'Expected ?id=<runId>.');
        return eventStream(method, () => {
          const given = Number(url.searchParams.get('after') ?? 0);
          const after = lastEventId(request.headers) ?? (Number.isSafeInteger(given) && given >= 0 ? given : 0);
          const events = runner.watch(id, { after, signal: request.signal });
          return toSSE(
            mapped(events, (e) => eventView(e, safe)),
            { retryMs: 1000 },
          );
        });
      }
      case '/api/live':
        return eventStream(method, () => liveStream(hub, request.signal));
      default:
        return problem(404, 'Not found.');
    }
  }

  /** `undefined` when `authorize` lets the request through; otherwise the response to send. */
  async function authorized(request: Request, action: InspectorAction): Promise<Response | undefined> {
    let verdict: boolean | Response;
    try {
      verdict = await options.authorize(request, action);
    } catch {
      return problem(500, 'Authorization failed.');
    }
    if (verdict === true) return undefined;
    if (verdict instanceof Response) {
      // One Response returned for every request (a module-level 401) can be sent once with its body:
      // afterwards its status and headers still are.
      if (!verdict.bodyUsed && !verdict.body?.locked) return verdict;
      return new Response(null, { status: verdict.status, statusText: verdict.statusText, headers: verdict.headers });
    }
    return problem(403, 'Forbidden.');
  }

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.pathname;
    if (!inBase(path, base)) {
      const miss = problem(404, 'Not found.');
      outside.add(miss);
      return miss;
    }
    try {
      return await route(request, url, path.slice(base.length));
    } catch (error) {
      // A TypeError is what the request sent that chainkit refuses (a cursor it did not make).
      return error instanceof TypeError
        ? problem(400, 'The request is not valid.')
        : problem(500, 'The inspector could not answer.');
    }
  };
  Object.defineProperty(handle, 'openPages', { get: () => hub.openPages });
  basePaths.set(handle, base);
  return handle as InspectorHandler & { readonly openPages: number };
}
