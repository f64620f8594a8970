// Issue 23: what tsc prints for a typo in a ref path, as a user reads it. Compiles small fixture
// files against the built declarations (run `npx tsup` first) and reads the first three lines.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const header = `import { z } from 'zod';
import { chain, defineChain, defineTool, ref } from 'chainkit';
const search = defineTool({ name: 'search', description: 's', effect: 'read', input: z.object({ query: z.string() }), output: z.object({ contacts: z.array(z.object({ id: z.string(), name: z.string(), email: z.string() })) }) });
const send = defineTool({ name: 'send', description: 's', effect: 'read', input: z.object({ to: z.string() }), output: z.object({ id: z.string() }) });
const input = z.object({ name: z.string(), tasks: z.array(z.object({ title: z.string() })) });
const userContext = z.object({ userId: z.string() });
void chain; void defineChain; void ref; void userContext;
`;

/** The errors tsc reports for `body`, as text. */
function tscErrors(body: string): string {
  // Inside the package, so 'chainkit' resolves to ./dist through package.json exports.
  const dir = mkdtempSync(join(root, '.type-messages-'));
  try {
    writeFileSync(join(dir, 'case.ts'), header + body);
    try {
      execFileSync(
        process.execPath,
        [
          join(root, 'node_modules/typescript/bin/tsc'),
          '--noEmit',
          '--strict',
          '--skipLibCheck',
          '--target',
          'es2022',
          '--module',
          'esnext',
          '--moduleResolution',
          'bundler',
          '--types',
          'node',
          '--pretty',
          'false',
          join(dir, 'case.ts'),
        ],
        { cwd: root, encoding: 'utf8' },
      );
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
    expect(firstLines(out)).toContain(
      `Argument of type '"emial"' is not assignable to parameter of type '"'emial' is not a field of step contact: id, name, email"'`,
    );
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('names the wrong segment of a nested path with an index', () => {
    const out = tscErrors(
      `chain('c', { input }).tool('find', search, (ref) => ({ query: ref('input', 'tasks.0.titel') })).build();\n`,
    );
    expect(firstLines(out)).toContain(`'titel' is not a field of tasks.0 in the input: title`);
  });

  it('says an index is missing before a field of an array', () => {
    const out = tscErrors(
      `chain('c', { input }).tool('find', search, (ref) => ({ query: ref('input', 'tasks.title') })).build();\n`,
    );
    expect(firstLines(out)).toContain(
      `'title' is not an index: tasks in the input is an array, so an index comes first (tasks.0.title)`,
    );
  });
});

// Issue 26 §3: the three messages a new user met, each one error whose first line says what is wrong.
describe('tsc messages for runs and implementations', { timeout: 60_000 }, () => {
  const imports = `import { createRunner, functionInvoker } from 'chainkit';\n`;

  it('running a chain that declares a context without one names the context and its type', () => {
    const out =
      tscErrors(`${imports}const c = chain('c', { input, context: z.object({ userId: z.string(), tenant: z.string().optional() }) })
  .tool('find', search, (ref) => ({ query: ref('input', 'name') })).build();
const runner = createRunner({ invoker: functionInvoker([search], { search: async () => ({ contacts: [] }) }) });
void runner.run(c, { name: 'Ada', tasks: [] });
`);
    expect(firstLines(out)).toContain(
      `is not assignable to parameter of type '"context { userId: string; tenant?: string } is required: run(chain, input, { context })"'`,
    );
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('an implementation returning the wrong shape leads with the wrong field', () => {
    const out = tscErrors(`${imports}functionInvoker([search, send], {
  search: async ({ query }) => ({ contacts: [{ id: query, name: 'Ada', email: 42 }] }),
  send: async ({ to }) => ({ id: to }),
});
`);
    expect(out.split('\n')[0]).toContain(
      `is not assignable to type '"wrong output of tool search: contacts[number].email: expected string"'`,
    );
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

describe('tsc messages for ref path typos in the declarative form', { timeout: 60_000 }, () => {
  const steps = (send: string, extra = ''): string => `defineChain({ name: 'd', input, context: userContext, steps: [
  { id: 'find', tool: search, input: { query: ref('input', 'name') } },
  { id: 'contact', select: { from: ref('find', 'contacts'), expect: 'one' } },
  { id: 'send', tool: send, input: { to: ${send} } },${extra}
] });
`;

  it('names the wrong field of a step and the valid ones, at the ref, once', () => {
    const out = tscErrors(steps(`ref('contact', 'emial')`));
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(2);
    // Reported at the property that holds the ref (line 11 of the file, column of `to`).
    expect(lines[0]).toMatch(/case\.ts\(11,38\): error TS2322: /);
    expect(lines[0]).toContain(`PathError<"'emial' is not a field of step contact: id, name, email">`);
  });

  it('names the wrong segment of a nested path with an index, in the input and the context', () => {
    expect(firstLines(tscErrors(steps(`ref('input', 'tasks.0.titel')`)))).toContain(
      `'titel' is not a field of tasks.0 in the input: title`,
    );
    expect(firstLines(tscErrors(steps(`ref('input', 'tasks.title')`)))).toContain(
      `'title' is not an index: tasks in the input is an array, so an index comes first (tasks.0.title)`,
    );
    expect(firstLines(tscErrors(steps(`ref('context', 'userid')`)))).toContain(
      `'userid' is not a field of the context: userId`,
    );
  });

  it('names a where field the selected items do not have, and a wrong ref in a matcher', () => {
    const where = tscErrors(
      steps(
        `'x'`,
        `\n  { id: 'again', select: { from: ref('find', 'contacts'), where: { nmae: { equals: 'x' } }, expect: 'one' } },`,
      ),
    );
    expect(firstLines(where)).toContain(`'nmae' is not a field of the selected items: id, name, email`);
    const matcher = tscErrors(
      steps(
        `'x'`,
        `\n  { id: 'again', select: { from: ref('find', 'contacts'), where: { name: { contains: ref('input', 'nmae') } }, expect: 'one' } },`,
      ),
    );
    expect(firstLines(matcher)).toContain(`'nmae' is not a field of the input: name, tasks`);
  });

  it('names a wrong step id in output and the ids there are', () => {
    const out = tscErrors(`defineChain({ name: 'd', input, steps: [
  { id: 'find', tool: search, input: { query: ref('input', 'name') } },
  { id: 'send', tool: send, input: { to: 'x' } },
], output: (s) => s.results.sned });
`);
    expect(firstLines(out)).toContain(
      `Property 'sned' does not exist on type 'Readonly<{ find: { contacts: { id: string; name: string; email: string; }[]; }; send: { id: string; }; }>'`,
    );
  });

  it('names the wrong field of the item in a forEach input, and the valid ones', () => {
    const greet = `const greet = chain('greet', { input: z.object({ to: z.string() }) }).compute('x', (s) => s.input.to).build();\n`;
    const out = tscErrors(
      greet +
        steps(
          `'x'`,
          `\n  { id: 'each', forEach: { over: ref('find', 'contacts'), chain: greet, input: { to: ref('item', 'emial') } } },`,
        ),
    );
    expect(firstLines(out)).toContain(`'emial' is not a field of the item: id, name, email`);
    expect(out.match(/error TS/g)).toHaveLength(1);
  });

  it('accepts the valid paths (no error at all)', () => {
    expect(
      tscErrors(
        steps(
          `ref('contact', 'email')`,
          `\n  { id: 'again', select: { from: ref('find', 'contacts'), where: { name: { contains: ref('input', 'tasks.0.title') } }, expect: 'all' } },`,
        ),
      ),
    ).toBe('');
  });
});

describe('tsc messages for a where field typo in the builder', { timeout: 60_000 }, () => {
  it('names the wrong field at the field, with the item fields in the type', () => {
    const out = tscErrors(`chain('c', { input })
  .tool('find', search, (ref) => ({ query: ref('input', 'name') }))
  .select('contact', (ref) => ({ from: ref('find', 'contacts'), where: { nmae: { equals: 'x' } }, expect: 'one' }))
  .build();
`);
    const first = firstLines(out);
    expect(first).toContain(`'nmae' does not exist in type '{ id?: `);
    expect(first).toMatch(/name\?: .*email\?: /);
  });
});
