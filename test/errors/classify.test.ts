import { describe, expect, it } from 'vitest';
import { classifyError, parseRetryAfter } from 'chainkit';
import { http } from '../helpers.js';

const cat = (e: unknown) => classifyError(e).category;

describe('classifyError', () => {
  it.each([
    [400, 'invalid_input'], [401, 'authentication_required'], [403, 'permission_denied'], [404, 'not_found'],
    [409, 'conflict'], [429, 'rate_limited'], [500, 'internal'], [503, 'unavailable'], [504, 'timeout'], [418, 'invalid_input'], [599, 'internal'],
  ])('maps HTTP %i to %s', (status, category) => {
    expect(cat(http(status))).toBe(category);
    expect(cat({ statusCode: status })).toBe(category);
  });

  it.each([
    ['ECONNREFUSED', 'network'], ['ECONNRESET', 'network'], ['ENOTFOUND', 'network'], ['EAI_AGAIN', 'network'],
    ['EPIPE', 'network'], ['UND_ERR_SOCKET', 'network'], ['ETIMEDOUT', 'timeout'],
  ])('maps Node code %s to %s', (code, category) => {
    expect(cat(Object.assign(new Error('boom'), { code }))).toBe(category);
    expect(cat(new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code }) }))).toBe(category);
  });

  it.each([
    ['invalid_task_id', 'not_found'], ['database_error', 'internal'], ['service_unavailable', 'unavailable'],
    ['rate_limit_exceeded', 'rate_limited'], ['permission_denied', 'permission_denied'], ['authentication_required', 'authentication_required'],
  ])('maps in-band code %s to %s', (code, category) => {
    expect(classifyError({ error: code }).category).toBe(category);
    expect(classifyError({ error: code }).code).toBe(code);
  });

  it.each([
    ['Request timed out', 'timeout'], ['user not found', 'not_found'], ['No such file', 'not_found'], ['row does not exist', 'not_found'],
    ['Forbidden', 'permission_denied'], ['Access denied for user', 'permission_denied'], ['syntax error near x', 'invalid_input'],
    ['malformed JSON', 'invalid_input'], ['Invalid argument: id', 'invalid_input'], ['network is down', 'network'], ['DNS lookup failed', 'network'],
    ['JavaScript heap out of memory', 'unavailable'], ['quota exceeded', 'unavailable'], ['resource exhausted', 'unavailable'], ['something odd', 'unknown'],
  ])('classifies the message %j as %s', (message, category) => {
    expect(cat(new Error(message))).toBe(category);
    expect(cat(message)).toBe(category);
  });

  it('classifies non-Error throws without throwing', () => {
    expect(classifyError(undefined)).toMatchObject({ category: 'unknown', message: expect.stringContaining('undefined') });
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
    const custom = [() => { throw new Error('broken'); }, (e: unknown) => (e === 'teapot' ? { category: 'conflict' as const, code: 'teapot', message: 'tea' } : undefined)];
    expect(classifyError('teapot', custom).category).toBe('conflict');
  });

  it('takes an error that declares a known category at its word, ahead of its status', () => {
    const declared = Object.assign(new Error('seat taken'), { category: 'conflict', code: 'seat_taken', status: 500, retryAfterMs: 50 });
    expect(classifyError(declared)).toMatchObject({ category: 'conflict', code: 'seat_taken', retryAfterMs: 50 });
    expect(classifyError(Object.assign(new Error('x'), { category: 'bogus', status: 503 })).category).toBe('unavailable');
  });
});
