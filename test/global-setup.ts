// Vitest global setup: the worker scripts that tests fork (and SIGKILL) by the dozen are bundled once
// into plain JavaScript, so each worker starts in ~0.6 s instead of ~1.8 s under tsx (the kill tests
// and the soak fork ~100 of them). Packages stay external: they resolve from node_modules as usual.
import { build } from 'tsup';
import { bundledWorker, WORKERS } from './fixtures/bundled.js';

export default async function setup(): Promise<void> {
  await build({
    config: false,
    entry: Object.fromEntries(WORKERS.map((name) => [name, `test/fixtures/${name}.ts`])),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outDir: bundledWorker('').replace(/\/[^/]*$/, ''),
    outExtension: () => ({ js: '.mjs' }),
    skipNodeModulesBundle: true,
    splitting: false,
    silent: true,
  });
}
