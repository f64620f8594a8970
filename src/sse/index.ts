/**
 * chainkit/sse: a run's events as Server-Sent Events, for a browser (`EventSource`) or any HTTP client
 * ([Watching runs](https://github.com/chainkit-dev/chainkit/blob/main/docs/guides/watching-runs.md)). Each event goes
 * out with `id:` its seq, so a browser that reconnects sends `Last-Event-ID` and the watch goes
 * on from there: no gap, no duplicate.
 *
 * @example
 * ```ts
 * import { lastEventId, toSSE, SSE_HEADERS } from 'chainkit/sse';
 *
 * // GET /runs/:id/events
 * const events = runner.watch(runId, { after: lastEventId(request.headers) ?? 0, signal: request.signal });
 * return new Response(toSSE(events), { headers: SSE_HEADERS });
 * ```
 *
 * @module chainkit/sse
 */
import type { RunEvent } from '../observe/run-events.js';

/** The response headers of an event stream (no caching, no proxy buffering). */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
});

/** Options of {@link toSSE}. */
export interface ToSSEOptions {
  /** A comment line this often keeps idle connections open through proxies. Default 15 000 ms; `0`: none. */
  heartbeatMs?: number;
  /** The reconnection delay the browser is told (`retry:`), in ms. Default: the browser's own. */
  retryMs?: number;
}

const encoder = new TextEncoder();

/** JSON that carries what a run event may hold: BigInts as strings (Dates become ISO strings as usual). */
function json(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

/**
 * One event in the text/event-stream format: `id:` its seq, `event:` its type, `data:` the event as JSON.
 *
 * @example
 * ```ts
 * formatSSE({ seq: 3, runId: 'r1', at: 0, type: 'step:progress', step: 'refund', data: { done: 3 } });
 * // 'id: 3\nevent: step:progress\ndata: {"seq":3,…}\n\n'
 * ```
 */
export function formatSSE(event: RunEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${json(event)}\n\n`;
}

/**
 * A run's events as a `text/event-stream` body. The stream ends after `run:end`; a watch that
 * fails (a reader cut off, an unknown run) sends an `error` event with `{ code, message, lastSeq }`
 * and ends; the message of a failure that is not a `RunWatchError` is a generic sentence (the error's own
 * text, a store's address or a thrown value, stays on the server). Cancelling the stream (the client
 * went away) ends the watch.
 *
 * @example
 * ```ts
 * const { events } = runner.stream(chain, input, { context });
 * res.writeHead(200, SSE_HEADERS);
 * const reader = toSSE(events).getReader();
 * for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
 *   if (!res.write(chunk.value)) await once(res, 'drain'); // a slow client: wait, or its buffer holds the whole log
 * res.end();
 * ```
 */
export function toSSE(events: AsyncIterable<RunEvent>, options: ToSSEOptions = {}): ReadableStream<Uint8Array> {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  if (!(typeof heartbeatMs === 'number' && heartbeatMs >= 0 && heartbeatMs < 2 ** 31))
    throw new TypeError('Expected `heartbeatMs` to be a number of ms (0: no heartbeat).');
  let iterator: AsyncIterator<RunEvent> | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  const stop = (): void => {
    if (heartbeat !== undefined) clearInterval(heartbeat);
    heartbeat = undefined;
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      iterator = events[Symbol.asyncIterator]();
      if (options.retryMs !== undefined)
        controller.enqueue(encoder.encode(`retry: ${Math.max(0, Math.floor(options.retryMs))}\n\n`));
      if (heartbeatMs > 0) {
        heartbeat = setInterval(() => {
          try {
            // a client that reads nothing gets no pile of them
            if ((controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(': keep-alive\n\n'));
          } catch {
            stop(); // closed meanwhile
          }
        }, heartbeatMs);
        heartbeat.unref?.();
      }
    },
    // Pulled as the client reads: a client that stops reading stops the watch reading too.
    async pull(controller) {
      try {
        const next = await iterator!.next();
        if (next.done) {
          stop();
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(formatSSE(next.value)));
      } catch (error) {
        stop();
        const e = error as {
          name?: unknown;
          code?: unknown;
          info?: { code?: unknown; userMessage?: unknown };
          lastSeq?: unknown;
          message?: unknown;
        };
        // A RunWatchError is written to be shown (its code, its message); a chainkit failure (an id that is no run
        // id, a store down) names its code in its `info`. Other texts (a store's address, a thrown context) stay
        // on the server: the browser gets the code and a sentence.
        const watchError = e?.name === 'RunWatchError' && typeof e.code === 'string';
        const code = watchError ? e.code : e?.info?.code;
        const message =
          watchError && typeof e.message === 'string'
            ? e.message
            : typeof e?.info?.userMessage === 'string'
              ? e.info.userMessage
              : 'The run could not be watched.';
        const body = {
          code: typeof code === 'string' ? code : 'watch_failed',
          message,
          ...(typeof e?.lastSeq === 'number' && { lastSeq: e.lastSeq }),
        };
        controller.enqueue(encoder.encode(`event: error\ndata: ${json(body)}\n\n`));
        controller.close();
      }
    },
    async cancel() {
      stop();
      await iterator?.return?.();
    },
  });
}

/**
 * The seq to resume from: the `Last-Event-ID` header a reconnecting browser sends (a Fetch
 * `Headers`, or Node's `IncomingHttpHeaders`), or `undefined` when absent or not a seq.
 *
 * @example
 * ```ts
 * const after = lastEventId(req.headers) ?? 0;
 * for await (const e of runner.watch(runId, { after })) …
 * ```
 */
export function lastEventId(
  headers: Headers | Readonly<Record<string, string | string[] | undefined>>,
): number | undefined {
  const raw =
    typeof (headers as Headers).get === 'function'
      ? (headers as Headers).get('last-event-id')
      : (headers as Record<string, string | string[] | undefined>)['last-event-id'];
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (typeof text !== 'string' || !/^\d{1,15}$/.test(text.trim())) return undefined;
  return Number(text.trim());
}
