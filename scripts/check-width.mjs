// `npm run format:check` (after Prettier): no line of src/ over 120 columns. Prettier wraps code at
// 120 but leaves comments and string literals as written; this catches those.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const MAX = 120;
// Generated: the inspector page built into one string.
const SKIP = new Set(['src/inspector/assets.ts']);

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (/\.(ts|mts)$/.test(entry.name) && !SKIP.has(path)) yield path;
  }
}

const long = [];
for (const file of files('src')) {
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.length > MAX) long.push(`${file}:${i + 1} (${line.length} columns)`);
    });
}
if (long.length > 0) {
  console.error(`check:width: ${long.length} line(s) over ${MAX} columns:\n  ${long.join('\n  ')}`);
  process.exit(1);
}
console.log(`check:width: no line of src/ over ${MAX} columns.`);
