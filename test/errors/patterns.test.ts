import { describe, expect, it } from 'vitest';
import { classifyError } from '../../src/errors/classify.js';

// The message patterns of issue 18 (docs/guides/policies.md, Errors): one test each.
const cat = (message: string) => classifyError(new Error(message)).category;

describe('message patterns', () => {
  it('"unknown tool" is not_found', () => {
    expect(cat('Unknown tool: search_web')).toBe('not_found');
    expect(cat('unknown tool')).toBe('not_found');
  });

  it('"command not found" is not_found', () => {
    expect(cat('sh: 1: jq: command not found')).toBe('not_found');
  });

  it('a bare "connection refused" is network', () => {
    expect(cat('connection refused')).toBe('network');
    expect(cat('dial tcp 10.0.0.5:5432: connect: Connection refused')).toBe('network');
  });

  it('"no module named" is unavailable (a missing dependency)', () => {
    expect(cat("ModuleNotFoundError: No module named 'pandas'")).toBe('unavailable');
  });

  it('"module not found" is unavailable, not not_found', () => {
    expect(cat("Module not found: Error: Can't resolve 'left-pad'")).toBe('unavailable');
  });

  it('"cannot find module" is unavailable', () => {
    expect(cat("Error: Cannot find module 'sharp'")).toBe('unavailable');
  });

  it('"connection reset" stays network', () => {
    expect(cat('connection reset by peer')).toBe('network');
    expect(cat('read ECONNRESET')).toBe('network');
  });

  it('the words stay whole: "unknown toolbar" names no tool; the code unknown_tool does', () => {
    // "unknown toolbar" names no tool; "tool" must be a whole word.
    expect(cat('unknown toolbar state')).toBe('unknown');
    expect(classifyError({ error: 'unknown_tool' }).category).toBe('not_found');
  });
});
