// The failure-path baseline on the current p-retry and p-timeout. Their current majors declare
// `engines: node >=22`, so they cannot be devDependencies of a Node 20 project (npm install would
// warn EBADENGINE): they are installed at bench time outside the project's dependencies, into
// node_modules/.cache/chainkit-bench-baselines (as test/compat/ai-v7.test.ts installs ai@7), and
// used if they load on this Node.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The two functions a baseline wraps each call in, and the versions they come from. */
export interface RetryKit {
  pRetry: (fn: () => Promise<unknown>, options: { retries: number; minTimeout: number }) => Promise<unknown>;
  pTimeout: (promise: Promise<unknown>, options: { milliseconds: number }) => Promise<unknown>;
  versions: string;
}

// bench/ (tsx) and .bench/ (the built bench) are both one level below the project root.
const root = fileURLToPath(new URL('..', import.meta.url));

/** The version of a package installed in the project's node_modules (the package.json of p-retry is not exported). */
export const installedVersion = (name: string): string =>
  String(JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version);

const WANTED = { 'p-retry': '9', 'p-timeout': '8' } as const;
const cache = join(root, 'node_modules', '.cache', 'chainkit-bench-baselines');

const installedMajor = (name: string): string | undefined => {
  const file = join(cache, 'node_modules', name, 'package.json');
  return existsSync(file) ? String(JSON.parse(readFileSync(file, 'utf8')).version).split('.')[0] : undefined;
};

function npmInstall(specs: string[]): Promise<void> {
  // The npm that runs `npm run bench` (its CLI script), else npm on PATH.
  const cli = process.env.npm_execpath;
  const [cmd, pre] = cli && cli.endsWith('.js') ? [process.execPath, [cli]] : ['npm', []];
  const args = [
    ...pre,
    'install',
    '--prefix',
    cache,
    '--no-save',
    '--no-package-lock',
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    ...specs,
  ];
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 120_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`npm ${args.join(' ')} failed: ${stderr || stdout || error.message}`)) : resolve(),
    );
  });
}

/**
 * p-retry 9 and p-timeout 8, installed into the cache on first use; a sentence saying why not when
 * they cannot be installed (no registry) or do not load on this Node.
 */
export async function currentRetryKit(): Promise<RetryKit | string> {
  try {
    const missing = Object.entries(WANTED).filter(([name, major]) => installedMajor(name) !== major);
    if (missing.length > 0) await npmInstall(missing.map(([name, major]) => `${name}@${major}`));
    const require = createRequire(join(cache, 'package.json'));
    const load = async (name: string): Promise<{ default: unknown; version: string }> => {
      const mod = (await import(pathToFileURL(require.resolve(name)).href)) as { default: unknown };
      return {
        default: mod.default,
        version: String(JSON.parse(readFileSync(join(cache, 'node_modules', name, 'package.json'), 'utf8')).version),
      };
    };
    const [retry, timeout] = await Promise.all([load('p-retry'), load('p-timeout')]);
    return {
      pRetry: retry.default as RetryKit['pRetry'],
      pTimeout: timeout.default as RetryKit['pTimeout'],
      versions: `p-retry ${retry.version}, p-timeout ${timeout.version}`,
    };
  } catch (error) {
    return `the p-retry ${WANTED['p-retry']} / p-timeout ${WANTED['p-timeout']} baseline was skipped: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * The same calls without p-retry and p-timeout: the retry loop and the timeout race a developer
 * writes by hand (a timer per attempt, cleared when it settles; exponential backoff).
 */
export const plainKit: RetryKit = {
  async pRetry(fn, { retries, minTimeout }) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (attempt >= retries) throw error;
        if (minTimeout > 0) await sleep(minTimeout * 2 ** attempt);
      }
    }
  },
  pTimeout(promise, { milliseconds }) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${milliseconds} ms`)), milliseconds);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  },
  versions: 'a hand-written retry loop and timeout race',
};
