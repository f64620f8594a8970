// The run store's Lua scripts (run-scripts.ts) as calls: each runs by its SHA, loaded once per
// server on NOSCRIPT, so a script's body is not resent with every call.
import {
  BEGIN,
  CLAIM,
  CREATE,
  DUE,
  FINISH,
  GET,
  JOURNAL,
  RENEW,
  REOPEN,
  REQUEST_CANCEL,
  RETRYING,
  TAKE_PARKED,
  WAKE_AT,
} from './run-scripts.js';
import { LIST, LIST_CONTEXT } from './list-scripts.js';
import { script } from './script.js';

export const create = script(CREATE);
export const journal = script(JOURNAL);
export const renew = script(RENEW);
export const finish = script(FINISH);
export const reopen = script(REOPEN);
export const claim = script(CLAIM);
export const get = script(GET);
export const list = script(LIST);
export const listContext = script(LIST_CONTEXT);
export const begin = script(BEGIN);
export const retrying = script(RETRYING);
export const requestCancel = script(REQUEST_CANCEL);
export const takeParked = script(TAKE_PARKED);
export const due = script(DUE);
export const wakeAtScript = script(WAKE_AT);
