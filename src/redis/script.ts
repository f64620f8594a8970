// A Lua script as a call: run by its SHA, loaded once per server on NOSCRIPT, so its body is not resent
// with every call.
import { createHash } from 'node:crypto';
import type { RedisClient } from './client.js';

/** A Lua script bound to its SHA: call it with a client, its keys and its arguments. */
export type Script = (
  redis: RedisClient,
  keys: readonly string[],
  args: readonly (string | number)[],
) => Promise<unknown>;

/**
 * Runs `lua` by its SHA, sending the body only when the server does not know it yet (NOSCRIPT).
 *
 * @example
 * ```ts
 * const get = script("return redis.call('GET', KEYS[1])");
 * await get(redis, ['k'], []);
 * ```
 */
export function script(lua: string): Script {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (redis, keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}
