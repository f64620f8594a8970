// `npm run check:cycles`: fails on any import cycle in src/ — between files (madge), and between
// folders, which must follow the layers below (docs/ARCHITECTURE.md "Layers"). Type-only imports
// count: a cycle of types still ties two parts together.
import madge from 'madge';

// Lowest first. A folder may import from folders in lower layers only; folders in one layer are
// independent of each other. `(root)` is src/index.ts. A new folder must be placed here.
const LAYERS = [
  ['util'],
  ['errors'],
  ['define'],
  ['invokers'],
  ['observe'],
  ['stores'],
  ['guidance', 'policies'],
  ['run'],
  ['tasks'],
  ['testing', 'redis', 'postgres', 'sqlite', 'mcp', 'otel', 'ai', 'openai-agents', 'sse'],
  ['inspector'], // serves runs as chainkit/sse does: built on it
  ['(root)'],
];
const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((folder) => [folder, i])));
const folderOf = (file) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '(root)');

const result = await madge('src', {
  fileExtensions: ['ts'],
  tsConfig: 'tsconfig.json',
  detectiveOptions: { ts: { skipTypeImports: false, skipAsyncImports: false } },
});
const graph = result.obj();
const problems = [];

// An import madge could not resolve would hide its edges: treat it as a failure, not a pass.
for (const file of result.warnings().skipped) problems.push(`unresolved import: ${file}`);

for (const cycle of result.circular()) problems.push(`file cycle: ${[...cycle, cycle[0]].join(' → ')}`);

// Folder edges, each with one file import that makes it (for the message).
const edges = new Map();
for (const [file, imports] of Object.entries(graph)) {
  const from = folderOf(file);
  for (const imported of imports) {
    const to = folderOf(imported);
    if (from !== to && !edges.has(`${from}→${to}`))
      edges.set(`${from}→${to}`, { from, to, via: `${file} → ${imported}` });
  }
}
for (const folder of new Set([...edges.values()].flatMap((e) => [e.from, e.to]))) {
  if (!rank.has(folder))
    problems.push(`folder src/${folder}/ is in no layer: add it to LAYERS in scripts/check-cycles.mjs`);
}
for (const { from, to, via } of edges.values()) {
  if (!rank.has(from) || !rank.has(to)) continue;
  if (edges.has(`${to}→${from}`) && from < to)
    problems.push(`folder cycle: ${from} ↔ ${to} (${via}; ${edges.get(`${to}→${from}`).via})`);
  if (rank.get(to) >= rank.get(from)) problems.push(`layer: ${from} may not import ${to} (${via})`);
}

const files = Object.keys(graph).length;
if (problems.length > 0) {
  console.error(
    `check:cycles: ${problems.length} problem(s) in ${files} files:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
  );
  process.exit(1);
}
console.log(
  `check:cycles: ${files} files in ${new Set(Object.keys(graph).map(folderOf)).size} folders; no file cycle, no folder cycle, every folder import goes down a layer.`,
);
