// An app with its own zod 4.1 type-checks against the built chainkit: beside chainkit's copy, and as the one peer copy.
import { spawn } from 'node:child_process';
import { mkdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const app = fileURLToPath(new URL('./zod-4-1', import.meta.url));
const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

/** Runs tsc on a project; resolves with its exit code and output (the diagnostics). */
function typecheck(project: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', project, '--pretty', 'false'], { cwd: root });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('an app on its own zod 4.1', () => {
  beforeAll(() => {
    // "Installs" zod 4.1 in the app: its node_modules/zod is the repo's `zod-4-1` (npm alias), so the
    // app's `import { z } from 'zod'` is 4.1 while chainkit's declarations (dist) import the repo's zod.
    mkdirSync(`${app}/node_modules`, { recursive: true });
    try {
      readlinkSync(`${app}/node_modules/zod`);
    } catch {
      symlinkSync('../../../../node_modules/zod-4-1', `${app}/node_modules/zod`, 'dir');
    }
  });

  it('type-checks with a second zod copy beside chainkit (no TS2740 on its schemas)', async () => {
    const { code, out } = await typecheck(`${app}/tsconfig.json`);
    expect(out).toBe('');
    expect(code).toBe(0);
  }, 60_000);

  it('type-checks with zod 4.1 as the only (peer) copy, chainkit declarations included', async () => {
    const { code, out } = await typecheck(`${app}/tsconfig.peer.json`);
    expect(out).toBe('');
    expect(code).toBe(0);
  }, 60_000);
});
