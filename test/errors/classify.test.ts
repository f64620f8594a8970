import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ERROR_CATEGORIES, functionInvoker } from 'chainkit';
import { classifyError } from '../../src/errors/classify.js';
import { parseRetryAfter } from '../../src/errors/retry-after.js';
import { createMockInvoker } from 'chainkit/testing';
import { toErrorInfo } from '../../src/errors/messages.js';
import { http } from '../helpers.js';

const cat = (e: unknown) => classifyError(e).category;

describe('classifyError', () => {
  it.each([
    [400, 'invalid_input'],
    [401, 'authentication_required'],
    [403, 'permission_denied'],
    [404, 'not_found'],
    [409, 'conflict'],
    [429, 'rate_limited'],
    [500, 'internal'],
    [503, 'unavailable'],
    [504, 'timeout'],
    [418, 'invalid_input'],
    [599, 'internal'],
  ])('maps HTTP %i to %s', (status, category) => {
    expect(cat(http(status))).toBe(category);
    expect(cat({ statusCode: status })).toBe(category);
  });

  it.each([
    ['ECONNREFUSED', 'network'],
    ['ECONNRESET', 'network'],
    ['ENOTFOUND', 'network'],
    ['EAI_AGAIN', 'network'],
    ['EPIPE', 'network'],
    ['UND_ERR_SOCKET', 'network'],
    ['ETIMEDOUT', 'timeout'],
  ])('maps Node code %s to %s', (code, category) => {
    expect(cat(Object.assign(new Error('boom'), { code }))).toBe(category);
    expect(cat(new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code }) }))).toBe(category);
  });

  it.each([
    ['record_not_found', 'not_found'],
    ['database_error', 'internal'],
    ['service_unavailable', 'unavailable'],
    ['rate_limit_exceeded', 'rate_limited'],
    ['permission_denied', 'permission_denied'],
    ['authentication_required', 'authentication_required'],
  ])('maps in-band code %s to %s', (code, category) => {
    expect(classifyError({ error: code }).category).toBe(category);
    expect(classifyError({ error: code }).code).toBe(code);
  });

  it.each([
    ['Request timed out', 'timeout'],
    ['user not found', 'not_found'],
    ['No such file', 'not_found'],
    ['row does not exist', 'not_found'],
    ['Forbidden', 'permission_denied'],
    ['Access denied for user', 'permission_denied'],
    ['syntax error near x', 'invalid_input'],
    ['malformed JSON', 'invalid_input'],
    ['Invalid argument: id', 'invalid_input'],
    ['network is down', 'network'],
    ['DNS lookup failed', 'network'],
    ['JavaScript heap out of memory', 'unavailable'],
    ['quota exceeded', 'unavailable'],
    ['resource exhausted', 'unavailable'],
    ['something odd', 'unknown'],
  ])('classifies the message %j as %s', (message, category) => {
    expect(cat(new Error(message))).toBe(category);
    expect(cat(message)).toBe(category);
  });

  it('classifies non-Error throws without throwing', () => {
    expect(classifyError(undefined)).toMatchObject({
      category: 'unknown',
      message: expect.stringContaining('undefined'),
    });
    expect(classifyError(null).category).toBe('unknown');
    expect(classifyError(42).category).toBe('unknown');
    expect(classifyError({ weird: true }).message).toBe('{"weird":true}');
    expect(classifyError({ message: 'Not Found here' }).category).toBe('not_found');
  });

  it('never shows secrets from a thrown object', () => {
    const c = classifyError({ detail: 'x', apiKey: 'sk-live-123', nested: { password: 'hunter2' } });
    expect(c.message).not.toContain('sk-live-123');
    expect(c.message).not.toContain('hunter2');
    expect(c.message).toContain('[REDACTED]');
  });

  it('reads Retry-After from seconds, HTTP dates, headers and in-band retry_after', () => {
    expect(classifyError(http(429, 'slow down', { headers: { 'retry-after': '7' } })).retryAfterMs).toBe(7000);
    expect(classifyError({ error: 'rate_limit_exceeded', retry_after: 3 }).retryAfterMs).toBe(3000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });

  it('lets a custom classifier go first, and survives one that throws', () => {
    const custom = [
      () => {
        throw new Error('broken');
      },
      (e: unknown) => (e === 'teapot' ? { category: 'conflict' as const, code: 'teapot', message: 'tea' } : undefined),
    ];
    expect(classifyError('teapot', custom).category).toBe('conflict');
  });

  it('takes an error that declares a known category at its word, ahead of its status', () => {
    const declared = Object.assign(new Error('seat taken'), {
      category: 'conflict',
      code: 'seat_taken',
      status: 500,
      retryAfterMs: 50,
    });
    expect(classifyError(declared)).toMatchObject({ category: 'conflict', code: 'seat_taken', retryAfterMs: 50 });
    expect(classifyError(Object.assign(new Error('x'), { category: 'bogus', status: 503 })).category).toBe(
      'unavailable',
    );
  });
});

// Issue 11 item 1: codes from outside are own keys only; `constructor` is just an unknown code.
describe('Object.prototype names as codes', () => {
  const NAMES = Object.getOwnPropertyNames(Object.prototype);
  const probe = defineTool({
    name: 'probe',
    description: 'Probe',
    input: z.object({}),
    output: z.object({}),
    effect: 'read',
    retry: false,
  });
  const chain = defineChain({ name: 'probe_chain', input: z.object({}), steps: [{ id: 'p', tool: probe, input: {} }] });
  const known = (c: unknown) => (ERROR_CATEGORIES as readonly unknown[]).includes(c);

  it('classifies every name as an error code without throwing', () => {
    for (const name of NAMES) {
      for (const thrown of [
        { code: name },
        { error: name },
        Object.assign(new Error(name), { code: name }),
        { category: name, code: name },
        new Error('x', { cause: { code: name } }),
      ]) {
        const c = classifyError(thrown);
        expect(known(c.category), `${name}: ${c.category}`).toBe(true);
        const info = toErrorInfo(c);
        expect(typeof info.userMessage).toBe('string');
      }
    }
  });

  it('keeps a custom classifier with a bogus category from breaking the message', () => {
    for (const name of NAMES) {
      const c = classifyError(new Error('x'), [() => ({ category: name as never, code: name, message: name })]);
      expect(known(c.category), name).toBe(true);
      expect(typeof toErrorInfo({ category: name as never, code: name, message: name }).userMessage).toBe('string');
    }
  });

  it('settles runs whose tool answers or throws them as `failed` (functionInvoker and mock)', async () => {
    const answers: [string, (name: string) => unknown][] = [
      ['in-band', (name) => ({ status: 'error', error: name })],
      ['in-band with message', (name) => ({ status: 'error', error: name, message: name })],
      [
        'thrown code',
        (name) => {
          throw Object.assign(new Error('tool broke'), { code: name });
        },
      ],
      [
        'thrown object',
        (name) => {
          throw { code: name, error: name, message: name };
        },
      ],
    ];
    for (const [how, answer] of answers) {
      for (const name of NAMES) {
        const runner = createRunner({ invoker: functionInvoker({ probe: () => answer(name) }), tools: [probe] });
        const mock = createRunner({ invoker: createMockInvoker({ probe: () => answer(name) }), tools: [probe] });
        try {
          for (const r of [await runner.run(chain, {}), await mock.run(chain, {}), await runner.invoke('probe', {})]) {
            expect(r.status, `${how} ${name}`).toBe('failed');
            if (r.status !== 'failed') continue;
            expect(r.error.category, `${how} ${name}`).toBe('unknown');
            expect(typeof r.error.userMessage).toBe('string');
            expect(r.error.suggestions.length).toBeGreaterThan(0);
          }
        } finally {
          await runner.close();
          await mock.close();
        }
      }
    }
  });
});

// Issue 11 "gaps": the message patterns of API.md §4, with word boundaries.
describe('classification by message text (API.md §4)', () => {
  it.each([
    ['context deadline exceeded', 'timeout'],
    ['Deadline exceeded while calling tasks', 'timeout'],
    ['The operation timed out', 'timeout'],
    ['Gateway timeout', 'timeout'],
    ['connect ETIMEDOUT 10.0.0.1:443', 'timeout'],
    ['HTTP 404', 'not_found'],
    ['Request failed with status code 404', 'not_found'],
    ['Task not found', 'not_found'],
    ['HTTP 401', 'authentication_required'],
    ['Unauthorized', 'authentication_required'],
    ['401 Unauthorized', 'authentication_required'],
    ['request unauthenticated', 'authentication_required'],
    ['HTTP 403: Forbidden', 'permission_denied'],
    ['insufficient permissions', 'permission_denied'],
    ['error 403', 'permission_denied'],
    ['Unexpected token < in JSON at position 0', 'invalid_input'],
    ['JSON parse error at line 1', 'invalid_input'],
    ['missing required field: user_id', 'invalid_input'],
    ['Missing required parameter', 'invalid_input'],
    ['connection reset by peer', 'network'],
    ['read ECONNRESET', 'network'],
    ['Could not resolve host: api.example.com', 'network'],
    ['connect ECONNREFUSED 127.0.0.1:5432', 'network'],
    ['ENOSPC: no space left on device', 'unavailable'],
    ['disk full', 'unavailable'],
    ['Dependency failed: payments', 'unavailable'],
    ['upstream dependency unavailable', 'unavailable'],
    ['Failed dependency', 'unavailable'],
    // Numbers and words only count as whole words: ids and other words that contain them are not codes.
    ['task 4041 failed', 'unknown'],
    ['record a4043 rejected', 'unknown'],
    ['order 14010 rejected', 'unknown'],
    ['build v1.404.2 rejected', 'unknown'],
    ['runtime output rejected', 'unknown'],
    ['x-403-y rejected', 'unknown'],
  ])('classifies %j as %s', (message, category) => {
    expect(cat(new Error(message))).toBe(category);
    expect(cat(message)).toBe(category);
    expect(cat({ message })).toBe(category);
  });

  it.each([
    ['malformed_input', 'invalid_input'],
    ['task_not_found', 'not_found'],
  ])('maps in-band code %s to %s', (code, category) => {
    expect(classifyError({ error: code })).toMatchObject({ category, code });
  });

  it('classifies an in-band result by its message, then by the words of its code', async () => {
    const probe = defineTool({
      name: 'probe2',
      description: 'Probe',
      input: z.object({}),
      output: z.object({}),
      effect: 'read',
      retry: false,
    });
    const answers = [
      [{ status: 'error', error: 'upstream_error', message: 'connection reset by peer' }, 'network'],
      [{ status: 'error', error: 'user_not_found' }, 'not_found'],
      [{ status: 'error', error: 'malformed_input', message: 'bad' }, 'invalid_input'],
      [{ status: 'error', error: 'task_not_found', message: 'no task 7' }, 'not_found'],
    ] as const;
    for (const [answer, category] of answers) {
      const runner = createRunner({
        invoker: functionInvoker({ probe2: () => answer }),
        tools: [probe],
        retry: { timeout: { retries: 0 }, network: { retries: 0 } },
      });
      const r = await runner.invoke('probe2', {});
      await runner.close();
      expect(r.status === 'failed' && r.error, JSON.stringify(answer)).toMatchObject({ category, code: answer.error });
    }
  });
});
