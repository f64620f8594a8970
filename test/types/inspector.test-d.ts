// chainkit/inspector's public types and runner.rerun (docs/guides/inspector.md), against the built declarations.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expectTypeOf, it } from 'vitest';
import { createRunner, functionInvoker, memoryRunStore, type Rerun, type RerunRefusal, type RunResult } from 'chainkit';
import { inspector, toNodeHandler, type InspectorAction, type InspectorHandler, type InspectorOptions } from 'chainkit/inspector';

describe('chainkit/inspector', () => {
  const runner = createRunner({ invoker: functionInvoker([], {}), stores: { runs: memoryRunStore() } });

  it('is a web-standard handler; authorize is required and gets the action', () => {
    const handle = inspector(runner, { basePath: '/ops', authorize: (_req, action) => action === 'read' });
    expectTypeOf(handle).toEqualTypeOf<InspectorHandler>();
    expectTypeOf(handle).toEqualTypeOf<(request: Request) => Promise<Response>>();
    expectTypeOf<InspectorAction>().toEqualTypeOf<'read' | 'decide' | 'cancel' | 'signal' | 'rerun'>();
    expectTypeOf<Parameters<InspectorOptions['authorize']>>().toEqualTypeOf<[Request, InspectorAction]>();
    // A Response (a 401, a redirect) or a boolean, sync or async.
    inspector(runner, { basePath: '/ops', authorize: async () => new Response(null, { status: 401 }) });
    // @ts-expect-error authorize is required: the handler refuses to be built without it
    inspector(runner, { basePath: '/ops' });
    // @ts-expect-error authorize answers a boolean or a Response
    inspector(runner, { basePath: '/ops', authorize: () => 'yes' });
  });

  it('mounts in Node through toNodeHandler', () => {
    const node = toNodeHandler(inspector(runner, { basePath: '/ops', authorize: () => true }));
    expectTypeOf(node).parameters.toEqualTypeOf<[IncomingMessage, ServerResponse, ((error?: unknown) => void)?]>();
  });

  it('runner.rerun answers a new run (its result typed) or why not', async () => {
    const r = await runner.rerun('run-1');
    expectTypeOf(r).toEqualTypeOf<Rerun | RerunRefusal>();
    expectTypeOf<RerunRefusal>().toEqualTypeOf<'not_found' | 'not_failed' | 'unknown_chain'>();
    if (typeof r !== 'string') expectTypeOf(r.result).toEqualTypeOf<Promise<RunResult>>();
  });
});
