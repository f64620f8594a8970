// Issue 23: what tsc prints for a typo in a ref path, as a user reads it. Compiles small fixture
// files against the built declarations (run `npx tsup` first) and reads the first three lines.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const header = `import { z } from 'zod';
import { chain, defineTool } from 'chainkit';
const search = defineTool({ name: 'search', description: 's', effect: 'read', input: z.object({ query: z.string() }), output: z.object({ contacts: z.array(z.object({ id: z.string(), name: z.string(), email: z.string() })) }) });
const send = defineTool({ name: 'send', description: 's', effect: 'read', input: z.object({ to: z.string() }), output: z.object({ id: z.string() }) });
const input = z.object({ name: z.string(), tasks: z.array(z.object({ title: z.string() })) });
`;

/** The errors tsc reports for `body`, as text. */
function tscErrors(body: string): string {
  // Inside the package, so 'chainkit' resolves to ./dist through package.json exports.
  const dir = mkdtempSync(join(root, '.type-messages-'));
  try {
    writeFileSync(join(dir, 'case.ts'), header + body);
    try {
      execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler', '--types', 'node', '--pretty', 'false', join(dir, 'case.ts')], { cwd: root, encoding: 'utf8' });
      return '';
    } catch (error) {
      return (error as { stdout: string }).stdout;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const firstLines = (text: string): string => text.split('\n').slice(0, 3).join('\n');

describe('tsc messages for ref path typos', { timeout: 60_000 }, () => {
  it('names the wrong field of a step and the valid ones, at the path argument, once', () => {
    const out = tscErrors(`chain('c', { input })
  .tool('find', search, (ref) => ({ query: ref('input', 'name') }))
  .select('contact', (ref) => ({ from: ref('find', 'contacts'), expect: 'one' }))
  .tool('send', send, (ref) => ({ to: ref('contact', 'emial') }))
  .build();
`);
    expect(firstLines(out)).toContain(`Argument of type '"emial"' is not assignable to parameter of type '"'emial' is not a field of step contact: id, name, email"'`);
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('names the wrong segment of a nested path with an index', () => {
    const out = tscErrors(`chain('c', { input }).tool('find', search, (ref) => ({ query: ref('input', 'tasks.0.titel') })).build();\n`);
    expect(firstLines(out)).toContain(`'titel' is not a field of tasks.0 in the input: title`);
  });

  it('says an index is missing before a field of an array', () => {
    const out = tscErrors(`chain('c', { input }).tool('find', search, (ref) => ({ query: ref('input', 'tasks.title') })).build();\n`);
    expect(firstLines(out)).toContain(`'title' is not an index: tasks in the input is an array, so an index comes first (tasks.0.title)`);
  });
});
