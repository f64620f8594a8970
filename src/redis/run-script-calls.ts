// The run store's Lua scripts (run-scripts.ts) as calls: each runs by its SHA, loaded once per
// server on NOSCRIPT, so a script's body is not resent with every call.
import { createHash } from 'node:crypto';
import type { RedisClient } from './client.js';
import {
  BEGIN,
  CLAIM,
  CREATE,
  DUE,
  FINISH,
  GET,
  JOURNAL,
  LIST,
  RENEW,
  REOPEN,
  REQUEST_CANCEL,
  RETRYING,
  TAKE_PARKED,
  WAKE_AT,
} from './run-scripts.js';

type Script = (redis: RedisClient, keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

/** Runs a script by its SHA (loading it once per server on NOSCRIPT): the body is not resent each call. */
function script(lua: string): Script {
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

export const create = script(CREATE);
export const journal = script(JOURNAL);
export const renew = script(RENEW);
export const finish = script(FINISH);
export const reopen = script(REOPEN);
export const claim = script(CLAIM);
export const get = script(GET);
export const list = script(LIST);
export const begin = script(BEGIN);
export const retrying = script(RETRYING);
export const requestCancel = script(REQUEST_CANCEL);
export const takeParked = script(TAKE_PARKED);
export const due = script(DUE);
export const wakeAtScript = script(WAKE_AT);
