// The key the idempotency store keeps a call under: its key scoped to its tool and its caller.
import { describe, expect, it } from 'vitest';
import { hashContext } from '../../src/run/checkpoint.js';
import { idempotencyStoreKey } from '../../src/run/call-context.js';

describe('idempotencyStoreKey', () => {
  it('is tool:hash of the validated context:key, the same hash a run id and a checkpoint are bound by', () => {
    const alice = { userId: 'alice', roles: ['admin'] };
    expect(idempotencyStoreKey('transfer', alice, 'req-1')).toBe(`transfer:${hashContext(alice)}:req-1`);
    expect(idempotencyStoreKey('transfer', alice, 'req-1')).toMatch(/^transfer:[0-9a-f]{64}:req-1$/);
    // Equal contexts in another key order, or another object, give the same key (kept hashes included).
    expect(idempotencyStoreKey('transfer', { roles: ['admin'], userId: 'alice' }, 'req-1')).toBe(idempotencyStoreKey('transfer', alice, 'req-1'));
    const long = { userId: 'alice', note: 'x'.repeat(5_000) }; // past the cached text length: hashed each time, same answer
    expect(idempotencyStoreKey('t', long, 'k')).toBe(`t:${hashContext(long)}:k`);
    expect(idempotencyStoreKey('t', { ...long }, 'k')).toBe(`t:${hashContext(long)}:k`);
  });

  it('differs for another user, another tool, another key, and an empty context', () => {
    const keys = [
      idempotencyStoreKey('transfer', { userId: 'alice' }, 'k'),
      idempotencyStoreKey('transfer', { userId: 'bob' }, 'k'),
      idempotencyStoreKey('close_account', { userId: 'alice' }, 'k'),
      idempotencyStoreKey('transfer', { userId: 'alice' }, 'k2'),
      idempotencyStoreKey('transfer', {}, 'k'),
      idempotencyStoreKey('transfer', { userId: 'alice', tenant: undefined }, 'k'),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});
