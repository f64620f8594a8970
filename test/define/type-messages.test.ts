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

// Issue 26 §3: the three messages a new user met, each one error whose first line says what is wrong.
describe('tsc messages for runs and implementations', { timeout: 60_000 }, () => {
  const imports = `import { createRunner, functionInvoker } from 'chainkit';\n`;

  it('running a chain that declares a context without one names the context and its type', () => {
    const out = tscErrors(`${imports}const c = chain('c', { input, context: z.object({ userId: z.string(), tenant: z.string().optional() }) })
  .tool('find', search, (ref) => ({ query: ref('input', 'name') })).build();
const runner = createRunner({ invoker: functionInvoker([search], { search: async () => ({ contacts: [] }) }) });
void runner.run(c, { name: 'Ada', tasks: [] });
`);
    expect(firstLines(out)).toContain(`is not assignable to parameter of type '"context { userId: string; tenant?: string } is required: run(chain, input, { context })"'`);
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('an implementation returning the wrong shape leads with the wrong field', () => {
    const out = tscErrors(`${imports}functionInvoker([search, send], {
  search: async ({ query }) => ({ contacts: [{ id: query, name: 'Ada', email: 42 }] }),
  send: async ({ to }) => ({ id: to }),
});
`);
    expect(out.split('\n')[0]).toContain(`is not assignable to type '"wrong output of tool search: contacts[number].email: expected string"'`);
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('a misspelled tool key is one error naming the key and the tools', () => {
    const out = tscErrors(`${imports}functionInvoker([search, send], {
  serach: async ({ query }, call) => ({ contacts: [{ id: query, name: call.runId, email: 'a@b' }] }),
  send: async ({ to }) => ({ id: to }),
});
`);
    expect(out.split('\n')[0]).toContain(`'serach' is not one of the tools given: search, send`);
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('a tool left without an implementation is one error naming it', () => {
    const out = tscErrors(`${imports}functionInvoker([search, send], { send: async ({ to }) => ({ id: to }) });\n`);
    expect(firstLines(out)).toContain(`Property 'search' is missing`);
    expect(out.match(/error TS/g)).toHaveLength(1);
  });
});
