import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('no open handles', () => {
  it('a script running 1,000 chains with hanging tools exits by itself after runner.close()', async () => {
    const script = fileURLToPath(new URL('../fixtures/hanging-chains.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => {
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000); // every timer in the script is 60 s: a leaked one keeps it alive past this
      child.on('exit', (c) => {
        clearTimeout(killer);
        resolve(c);
      });
    });
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({
      codes: { attempt_timeout: 500, deadline_exceeded: 500 },
      afterClose: 'runner_closed',
    });
  }, 40_000);
});
