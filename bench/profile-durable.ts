// A durable chain on PostgreSQL in a loop, for `node --cpu-prof` / `--heap-prof` (not part of `npm run bench`):
//   npx tsup bench/profile-durable.ts --no-config --format esm --target node20 --out-dir .bench --silent && node --cpu-prof .bench/profile-durable.js
// PROFILE_N chains (default 2000) after 300 warm-up ones; PROFILE_LOG=1 prints every statement sent (and its values);
// PROFILE_MODE=journal | chainkit | noevents runs one of them, PROFILE_MODE=ab alternates all three and prints CPU per chain.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { parseSchema } from '../src/define/schema.js';
import { postgresStores } from '../src/postgres/index.js';
import { createRunner, functionInvoker, listTasks, updateTask } from '../src/index.js';
import { chain, list, TASKS, update, USER } from './fixture.js';

const impl = {
  list_tasks: () => ({ tasks: TASKS }),
  update_task: (i: { title?: string }) => ({ task: { ...TASKS[3]!, title: i.title ?? '' } }),
};
const pool = new pg.Pool({
  connectionString: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  max: 10,
});
const schema = `chainkit_profile_${process.pid}`;
const stores = postgresStores(pool, { schema });
const runner = createRunner({ invoker: functionInvoker(impl), tools: [list, update], stores });
runner.events.on('step:end', () => {});
const noEvents = createRunner({
  invoker: functionInvoker(impl),
  tools: [list, update],
  stores: { ...stores, runs: { ...stores.runs, events: undefined } },
});
noEvents.events.on('step:end', () => {});
const N = Number(process.env.PROFILE_N ?? 2000);
const input = { match: 'dentist', title: 'Dentist 3pm' };
const parse = <T>(schema: { '~standard': unknown }, value: unknown): T => {
  const r = parseSchema(schema as never, value);
  if (!r.success) throw new Error('invalid');
  return r.data as T;
};
// The issue-19 journal (bench/durable.ts), for A/B comparisons of CPU in one process.
const journal = async (): Promise<void> => {
  const runId = randomUUID();
  await pool.query(`INSERT INTO ${schema}_j.runs (run_id, chain, input, status) VALUES ($1, $2, $3, 'running')`, [
    runId,
    chain.name,
    input,
  ]);
  const found0 = parse<{ tasks: typeof TASKS }>(listTasks.output, impl.list_tasks());
  parse(listTasks.input, { user_id: USER, status: 'all' });
  await pool.query(`INSERT INTO ${schema}_j.steps (run_id, step, output) VALUES ($1, 'find', $2)`, [runId, found0]);
  const found = found0.tasks.filter((t) => t.title.toLowerCase().includes(input.match));
  const updated = parse(
    updateTask.output,
    impl.update_task(parse(updateTask.input, { user_id: USER, task_id: found[0]!.task_id, title: input.title })),
  );
  await pool.query(`INSERT INTO ${schema}_j.steps (run_id, step, output) VALUES ($1, 'update', $2)`, [runId, updated]);
  await pool.query(
    `UPDATE ${schema}_j.runs SET status = 'completed', result = $2, ended_at = now() WHERE run_id = $1`,
    [runId, updated],
  );
};
const mode = process.env.PROFILE_MODE ?? 'chainkit';
const on = mode === 'noevents' ? noEvents : runner;
const one =
  mode === 'journal'
    ? journal
    : async (): Promise<void> => {
        const r = await on.run(chain, input, { context: { userId: USER } });
        if (r.status !== 'completed') throw new Error(JSON.stringify(r));
      };
const ab = async (): Promise<void> => {
  // PROFILE_MODE=ab: journal, chainkit, no events, alternating blocks of 200; CPU µs per chain, medians.
  const modes = {
    journal,
    chainkit: async () => void (await runner.run(chain, input, { context: { userId: USER } })),
    noevents: async () => void (await noEvents.run(chain, input, { context: { userId: USER } })),
  };
  const cpu: Record<string, number[]> = { journal: [], chainkit: [], noevents: [] };
  const wall: Record<string, number[]> = { journal: [], chainkit: [], noevents: [] };
  for (let round = 0; round < Number(process.env.PROFILE_ROUNDS ?? 7); round++) {
    for (const [name, fn] of Object.entries(modes)) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < 200; i++) await fn();
      const c = process.cpuUsage(c0);
      cpu[name]!.push((c.user + c.system) / 200);
      wall[name]!.push(((performance.now() - t0) * 1000) / 200);
    }
  }
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const name of Object.keys(modes))
    console.log(
      `${name.padEnd(9)} CPU ${med(cpu[name]!).toFixed(0).padStart(5)} µs (min ${Math.min(...cpu[name]!).toFixed(0)})  wall ${med(wall[name]!).toFixed(0).padStart(6)} µs (min ${Math.min(...wall[name]!).toFixed(0)})`,
    );
};
try {
  await stores.migrate();
  await pool.query(`CREATE SCHEMA ${schema}_j; CREATE TABLE ${schema}_j.runs (run_id text PRIMARY KEY, chain text NOT NULL, input jsonb NOT NULL, status text NOT NULL, result jsonb, started_at timestamptz NOT NULL DEFAULT now(), ended_at timestamptz);
    CREATE TABLE ${schema}_j.steps (run_id text NOT NULL, step text NOT NULL, output jsonb NOT NULL, PRIMARY KEY (run_id, step));`);
  for (let i = 0; i < 300; i++) await one();
  if (mode === 'ab') {
    for (let i = 0; i < 300; i++) await journal();
    for (let i = 0; i < 300; i++) await noEvents.run(chain, input, { context: { userId: USER } });
    await ab();
  } else if (process.env.PROFILE_LOG) {
    const query = pool.query.bind(pool) as (q: unknown) => Promise<unknown>;
    (pool as { query: unknown }).query = (q: { text: string; values?: unknown[] }) => {
      console.log((q.text ?? String(q)).replace(/\s+/g, ' ').slice(0, 100), '\n  ', JSON.stringify(q.values));
      return query(q);
    };
    await one();
  } else {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await one();
    const cpu = process.cpuUsage(cpu0);
    console.log(
      `${(((performance.now() - t0) * 1000) / N).toFixed(0)} µs / chain, ${((cpu.user + cpu.system) / N).toFixed(0)} µs CPU / chain`,
    );
  }
} finally {
  await runner.close();
  await noEvents.close();
  await stores.close();
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; DROP SCHEMA IF EXISTS ${schema}_j CASCADE`);
  await pool.end();
}
