// `node --import ./ioredis-6-alias.mjs script.ts`: the script's `import … from 'ioredis'` loads ioredis 6
// (the repo's `ioredis-6` npm alias), so a worker process written for ioredis runs unchanged on v6.
import { register } from 'node:module';

const hooks = `export async function resolve(specifier, context, next) {
  return next(specifier === 'ioredis' ? 'ioredis-6' : specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, import.meta.url);
