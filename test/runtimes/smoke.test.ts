// The built main entry runs outside Node: a chain stops at a confirmation gate and resumes with its
// token on Bun, Deno and Cloudflare workerd (binaries from the npm registry, devDependencies).
// Uses dist/ as built by `npm test`'s pretest; builds nothing but the one-file workerd bundle.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { fromBase64Url, hmacSha256, sha256, toBase64Url, toHex } from '../../src/util/sha256.js';
import { newId } from '../../src/run/ids.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = (name: string): string => join(root, 'node_modules', '.bin', name);
// Plain absolute paths: every runtime and esbuild take them (esbuild takes no file: URLs).
const dist = (file: string): string => join(root, 'dist', file);
const work = mkdtempSync(join(tmpdir(), 'chainkit-runtimes-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// The script every runtime runs: the built-in find_and_delete chain against the in-memory task store.
const SMOKE = `
import { createRunner, findAndDelete, taskTools } from ${JSON.stringify(dist('index.js'))};
import { createTaskStore, fixtures } from ${JSON.stringify(dist('testing/index.js'))};
export async function smoke() {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [findAndDelete] });
  try {
    const ctx = { context: { userId: fixtures.alice } };
    const gate = await runner.run(findAndDelete, { match: 'groceries' }, ctx);
    if (gate.status !== 'awaiting_confirmation') return { gate: gate.status, error: gate.error };
    const done = await runner.resume(gate.resumeToken, { approved: true }, ctx);
    return {
      gate: gate.status, prompt: gate.confirmation.prompt, tokenShape: /^[\\w-]+\\.[\\w-]{43}$/.test(gate.resumeToken),
      done: done.status, output: done.status === 'completed' ? done.output : done.error,
      left: store.tasks(fixtures.alice).map((t) => t.title),
    };
  } finally {
    await runner.close();
  }
}
`;
writeFileSync(join(work, 'smoke.mjs'), SMOKE);
writeFileSync(
  join(work, 'main.mjs'),
  `import { smoke } from './smoke.mjs';\nconsole.log(JSON.stringify(await smoke()));\n`,
);

const expectSmoke = (stdout: string): void => {
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
  expect(result).toMatchObject({
    gate: 'awaiting_confirmation',
    prompt: "Are you sure you want to delete 'Buy groceries'?",
    tokenShape: true,
    done: 'completed',
    output: { title: 'Buy groceries', deleted: true },
  });
  expect(result.left).not.toContain('Buy groceries');
};

function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((done, fail) => {
    execFile(file, args, { cwd: work, timeout: 20_000, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      if (error) fail(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else done(stdout);
    });
  });
}

const freePort = (): Promise<number> =>
  new Promise((done, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });

describe('the main entry on other runtimes', () => {
  it('has no Node-only import or Buffer in what src/index.ts and chainkit/testing reach', () => {
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      expect(text, file).not.toMatch(
        /from\s*["'](?:node:[\w/]+|crypto|buffer|fs|os|path|util|stream|events|http|https|net)["']/,
      );
      expect(text, file).not.toMatch(/\bBuffer\b|\bprocess\.\w/);
      for (const [, rel] of text.matchAll(/from\s*["'](\.{1,2}\/[^"']+)["']/g)) visit(resolve(dirname(file), rel!));
    };
    visit(join(root, 'dist/index.js'));
    visit(join(root, 'dist/testing/index.js'));
    expect(seen.size).toBeGreaterThan(2);
  });

  it('hashes, signs and encodes exactly as node:crypto does', () => {
    for (const size of [0, 1, 2, 3, 55, 56, 63, 64, 65, 119, 120, 1000]) {
      const bytes = new Uint8Array(randomBytes(size));
      expect(toHex(sha256(bytes))).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(toBase64Url(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
      expect(fromBase64Url(toBase64Url(bytes))).toEqual(bytes);
      for (const key of ['k', 'a-secret-of-sixteen+', 'x'.repeat(64), 'ü'.repeat(70)]) {
        expect(toBase64Url(hmacSha256(key, bytes))).toBe(createHmac('sha256', key).update(bytes).digest('base64url'));
      }
    }
    expect(toHex(sha256('héllo ✓'))).toBe(createHash('sha256').update('héllo ✓').digest('hex'));
    expect(fromBase64Url('a+b')).toBeUndefined();
    expect(fromBase64Url('abcde')).toBeUndefined();
    const ids = new Set(Array.from({ length: 3000 }, newId));
    expect(ids.size).toBe(3000);
    for (const id of ids) expect(id).toMatch(/^[\w-]{21}$/);
  });

  it('runs a gated chain and resumes it on Bun', async () => {
    expectSmoke(await run(bin('bun'), ['main.mjs']));
  });

  it('runs a gated chain and resumes it on Deno (local node_modules, no network)', async () => {
    // manual: bare imports inside dist/ (zod, p-retry, …) resolve from this repo's node_modules; nothing is downloaded.
    expectSmoke(
      await run(
        bin('deno'),
        ['run', '--node-modules-dir=manual', '--cached-only', `--allow-read=${root},${work}`, 'main.mjs'],
        { DENO_NO_UPDATE_CHECK: '1' },
      ),
    );
  });

  it('runs a gated chain and resumes it on workerd (no nodejs_compat)', async () => {
    // workerd has no node_modules: bundle the worker with zod and the other dependencies into one module.
    writeFileSync(
      join(work, 'worker.mjs'),
      `import { smoke } from './smoke.mjs';\nexport default { async fetch() { return Response.json(await smoke()); } };\n`,
    );
    await run(bin('esbuild'), [
      'worker.mjs',
      '--bundle',
      '--format=esm',
      '--platform=neutral',
      '--conditions=workerd,worker,browser',
      '--main-fields=module,main',
      '--outfile=bundle.js',
      '--log-level=error',
    ]);
    const port = await freePort();
    writeFileSync(
      join(work, 'config.capnp'),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .smokeWorker) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const smokeWorker :Workerd.Worker = (
  modules = [ (name = "worker", esModule = embed "bundle.js") ],
  compatibilityDate = "2026-11-01",
);
`,
    );
    // Its own process group: the npm `workerd` launcher starts the real binary as a child, and both must go.
    const server: ChildProcess = spawn(bin('workerd'), ['serve', 'config.capnp'], {
      cwd: work,
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let stderr = '';
    server.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((done) => server.once('exit', () => done()));
    try {
      let body: string | undefined;
      for (let i = 0; i < 400 && body === undefined; i++) {
        if (server.exitCode !== null) throw new Error(`workerd exited: ${stderr}`);
        body = await fetch(`http://127.0.0.1:${port}/`).then(
          (r) => (r.ok ? r.text() : Promise.reject(new Error(`${r.status} ${stderr}`))),
          (e: unknown) => {
            if ((e as { cause?: { code?: string } }).cause?.code !== 'ECONNREFUSED') throw e;
            return new Promise<undefined>((wait) => setTimeout(() => wait(undefined), 25)); // not listening yet
          },
        );
      }
      expect(body, stderr).toBeDefined();
      expectSmoke(body!);
    } finally {
      if (server.exitCode === null) process.kill(-server.pid!, 'SIGKILL');
      await exited;
    }
  });
});
