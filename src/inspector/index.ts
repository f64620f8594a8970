/**
 * chainkit/inspector: a page mounted in your own app to see durable runs (the approvals inbox first,
 * each run's step waterfall, live), approve or decline parked gates, cancel, send a signal and
 * re-run failed runs; behind your app's own authorization, with nothing loaded from elsewhere
 * (docs/guides/inspector.md).
 *
 * @example
 * ```ts
 * import { inspector, toNodeHandler } from 'chainkit/inspector';
 *
 * const handle = inspector(runner, { basePath: '/ops/chains', authorize: async (req, action) => isAdmin(req) });
 * app.use(toNodeHandler(handle));                            // Express, node:http
 * // or web-standard: app.all('/ops/chains/*', (c) => handle(c.req.raw)) // Hono, Next.js, Bun, Deno
 * ```
 *
 * @module chainkit/inspector
 */
import type { Runner } from '../run/runner-api.js';
import { createInspector, type InspectorHandler, type InspectorOptions } from './handler.js';

export { type InspectorAction, type InspectorHandler, type InspectorOptions } from './handler.js';
export { CSP } from './http.js';
export { toNodeHandler, type NodeInspectorHandler } from './node.js';

/**
 * The inspector of `runner` (a runner with `stores.runs`) as a web-standard handler:
 * `(request: Request) => Promise<Response>`, serving the page and its API under `basePath`.
 * `authorize(request, action)` is required and is called for every request (`'read'`) and every
 * action (`'decide'`, `'cancel'`, `'signal'`, `'rerun'`); without it the handler refuses to be built.
 * Actions are POSTs carrying an anti-CSRF token; every response carries a strict
 * Content-Security-Policy; everything the page gets is redacted as traces are.
 *
 * @example
 * ```ts
 * const handle = inspector(runner, {
 *   basePath: '/ops/chains',
 *   authorize: async (req, action) => {
 *     const user = await sessionUser(req);
 *     return action === 'read' ? user?.role === 'support' || user?.role === 'admin' : user?.role === 'admin';
 *   },
 * });
 * createServer(toNodeHandler(handle)).listen(3000); // http://localhost:3000/ops/chains
 * ```
 */
export function inspector(runner: Runner, options: InspectorOptions): InspectorHandler {
  return createInspector(runner, options);
}
