// chainkit/postgres needs no `@types/pg`: a strict app with `pg` installed and no `@types/pg`
// type-checks against the PACKED chainkit, its declarations included. The app lives in a temp
// directory so that no node_modules/@types/pg above it is visible. Needs dist (`npx tsup`); offline.
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const sources = fileURLToPath(new URL('./pg-types', import.meta.url));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** Runs a command to completion; resolves with its exit code and stdout/stderr. */
function run(cmd: string, args: readonly string[], cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd });
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

let app = '';

describe('an app on chainkit/postgres without @types/pg', () => {
  beforeAll(async () => {
    const built = join(root, 'dist', 'postgres', 'index.d.ts');
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(join(root, 'src', 'postgres', 'index.ts')).mtimeMs) {
      throw new Error(
        'dist/postgres is missing or older than src/postgres: build first (`npm test` runs tsup in pretest, or `npx tsup`)',
      );
    }
    app = mkdtempSync(join(tmpdir(), 'chainkit-pg-types-'));
    // chainkit as npm packs it (package.json `files`), unpacked where npm would install it.
    const pack = await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', app], root);
    expect(pack.code, pack.out).toBe(0);
    const tarball = join(app, pack.out.trim().split('\n').at(-1)!);
    mkdirSync(join(app, 'node_modules', 'chainkit'), { recursive: true });
    const untar = await run(
      'tar',
      ['-xzf', tarball, '-C', join(app, 'node_modules', 'chainkit'), '--strip-components=1'],
      app,
    );
    expect(untar.code, untar.out).toBe(0);
    // What the app installed besides: pg (JavaScript only), zod, Node's types; chainkit's own dependencies.
    mkdirSync(join(app, 'node_modules', '@types'), { recursive: true });
    for (const pkg of ['pg', 'zod', 'eventemitter3', '@types/node'])
      symlinkSync(join(root, 'node_modules', pkg), join(app, 'node_modules', pkg), 'dir');
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'chainkit-pg-types-app', private: true, type: 'module' }),
    );
    copyFileSync(join(sources, 'app.ts'), join(app, 'app.ts'));
    copyFileSync(join(sources, 'tsconfig.json'), join(app, 'tsconfig.json'));
  }, 60_000);

  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('type-checks (strict, Node16 resolution, chainkit declarations included) with no error', async () => {
    expect(existsSync(join(app, 'node_modules', '@types', 'pg'))).toBe(false);
    const r = await run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false', '--listFiles'], app);
    const lines = r.out.split('\n');
    expect(lines.filter((line) => /error TS/.test(line))).toEqual([]);
    expect(lines.some((line) => line.includes('/node_modules/chainkit/dist/postgres/index.d.ts'))).toBe(true); // checked, not skipped
    expect(lines.filter((line) => line.includes('@types/pg'))).toEqual([]);
    expect(r.code).toBe(0);
  }, 120_000);
});
