// Resume tokens are not malleable: of every variant of a valid token, only the token itself verifies.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool } from 'chainkit';
import { signToken, verifyToken } from '../../src/run/checkpoint.js';

const secret = 'a-test-secret-of-enough-length';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Signs any payload string the way signToken does (to test what is refused even when signed). */
const macOf = (payload: string): string => createHmac('sha256', secret).update(payload).digest('base64url');
const EXTRA = ['+', '/', '=', '.', ' ', '\n', '\t', '%', '\u0000', 'é'];

/** Every single-character change, deletion and insertion, every truncation and padding, case flips, wrappers. */
function variants(token: string): Set<string> {
  const out = new Set<string>();
  const chars = [...ALPHABET, ...EXTRA];
  for (let i = 0; i < token.length; i++) {
    for (const c of chars) out.add(token.slice(0, i) + c + token.slice(i + 1)); // substitute
    out.add(token.slice(0, i) + token.slice(i + 1)); // delete
    for (const c of EXTRA) out.add(token.slice(0, i) + c + token.slice(i)); // insert a non-alphabet character
  }
  for (let n = 0; n < token.length; n++) out.add(token.slice(0, n)); // truncate
  for (const tail of ['=', '==', '===', '.', '.x', '.' + token.split('.')[1], ' ', '\n', 'A', 'AA', '\u0000']) {
    out.add(token + tail);
    out.add(tail + token);
  }
  const [payload, mac] = token.split('.') as [string, string];
  out.add(`${payload}==.${mac}`);
  out.add(`${payload}.${mac}=`);
  out.add(`${payload.replace(/-/g, '+').replace(/_/g, '/')}.${mac.replace(/-/g, '+').replace(/_/g, '/')}`);
  out.add(`${payload}.${mac.replace(/-/g, '+').replace(/_/g, '/')}`);
  out.add(token.toUpperCase());
  out.add(token.toLowerCase());
  out.add(`${mac}.${payload}`);
  out.add(`${payload}.${mac}.${mac}`);
  out.add(`${payload}..${mac}`);
  out.add(` ${token} `);
  out.delete(token);
  return out;
}

describe('resume tokens', () => {
  it('a valid token verifies; none of its hundreds of variants does', () => {
    const now = 1_700_000_000_000;
    for (const id of ['c1', 'checkpoint-0123456789abcdef', '🙂-id', 'a'.repeat(40)]) {
      const token = signToken(id, now + 60_000, secret);
      expect(verifyToken(token, secret, now)).toEqual({ id, expiresAt: now + 60_000 });
      const all = variants(token);
      expect(all.size).toBeGreaterThan(3000);
      const accepted = [...all].filter((v) => !('problem' in verifyToken(v, secret, now)));
      expect(accepted).toEqual([]);
    }
  });

  it('the last character of the signature carries unused bits: its siblings are refused', () => {
    const token = signToken('c1', 2e12, secret);
    // 32 bytes in 43 base64url characters: the last character's two low bits are padding.
    const last = token.at(-1)!;
    const index = ALPHABET.indexOf(last);
    const siblings = [0, 1, 2, 3].map((b) => ALPHABET[(index & ~3) | b]!).filter((c) => c !== last);
    expect(siblings).toHaveLength(3);
    for (const c of siblings)
      expect(verifyToken(token.slice(0, -1) + c, secret, 0)).toEqual({ problem: 'invalid_token' });
  });

  it('refuses a payload that is not canonical base64url, even with a valid signature over it', () => {
    const json = Buffer.from(JSON.stringify({ i: 'c1', e: 2e12 }));
    const canonical = json.toString('base64url');
    expect(verifyToken(`${canonical}.${macOf(canonical)}`, secret, 0)).toEqual({ id: 'c1', expiresAt: 2e12 });
    for (const payload of [
      json.toString('base64'),
      `${canonical}=`,
      `${canonical}==`,
      ` ${canonical}`,
      `${canonical}\n`,
    ]) {
      if (payload === canonical) continue;
      expect(verifyToken(`${payload}.${macOf(payload)}`, secret, 0)).toEqual({ problem: 'invalid_token' });
    }
  });

  it('refuses a signed payload that is not the expected JSON shape', () => {
    for (const data of [
      '[]',
      'null',
      '{"i":1,"e":2}',
      '{"i":"a","e":"2"}',
      '{"i":"a","e":1e400}',
      '{"i":"a","e":2,"__proto__":{}}x',
    ]) {
      const payload = Buffer.from(data).toString('base64url');
      expect(verifyToken(`${payload}.${macOf(payload)}`, secret, 0)).toEqual({ problem: 'invalid_token' });
    }
  });

  it('a runner refuses a tampered token with invalid_token and still takes the real one', async () => {
    const del = defineTool({
      name: 'del',
      description: 'd',
      input: z.object({}),
      output: z.unknown(),
      effect: 'destructive',
    });
    const chain = defineChain({
      name: 'gated',
      input: z.object({}),
      steps: [{ id: 'd', tool: del, input: {}, confirm: { prompt: 'sure?' } }],
    });
    const runner = createRunner({ invoker: async () => ({ ok: true }), tools: [del], chains: [chain], secret });
    const gate = await runner.run(chain, {});
    if (gate.status !== 'awaiting_confirmation') throw new Error(gate.status);
    const tampered = `${gate.resumeToken}=`;
    const r = await runner.resume(tampered, { approved: true });
    expect(r.status === 'failed' && r.error.code).toBe('invalid_token');
    expect((await runner.resume(gate.resumeToken, { approved: true })).status).toBe('completed');
    await runner.close();
  });
});
