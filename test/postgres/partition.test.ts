// A partition between a durable runner and PostgreSQL (the network stops passing bytes: no error, no
// reset), made by a proxy this test owns; the shared server is never stopped.
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { postgresStores } from 'chainkit/postgres';
import { freezableProxy, type FreezableProxy } from '../helpers/proxy.js';
import { DEADLINE_MS, paid, paidLater, partitionScenario } from '../helpers/partition.js';

// Real PostgreSQL on 127.0.0.1:5432 (db test, user postgres); the schema is dropped afterwards.
const schema = `ck_partition_${process.pid}_${Date.now() % 1_000_000}`;
const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
let proxy: FreezableProxy;
const direct = new pg.Pool({ ...connection, max: 2 });
const pools: pg.Pool[] = [];
beforeAll(async () => {
  proxy = await freezableProxy({ host: connection.host, port: connection.port });
});
afterAll(async () => {
  proxy.thaw();
  for (const p of pools) await p.end();
  await direct.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await direct.end();
  await proxy.close();
});

describe('chainkit/postgres behind a partition', () => {
  it("with the pool's defaults: the run fails store_unavailable at its deadline, close() returns within 5 s, another runner ends the run", async () => {
    const proxied = new pg.Pool({ ...connection, port: proxy.port, max: 2 });
    pools.push(proxied);
    const stores = postgresStores(proxied, { schema });
    await stores.migrate();
    await partitionScenario(proxy, stores, postgresStores(direct, { schema }), {
      chain: paid,
      failsWithinMs: DEADLINE_MS + 500,
      closesWithinMs: 2_000,
      recovered: 'deadline_exceeded',
    });
  });

  it('with query_timeout and connectionTimeoutMillis: it fails sooner, the pool ends while still partitioned, another runner completes the run', async () => {
    const proxied = new pg.Pool({
      ...connection,
      port: proxy.port,
      max: 2,
      query_timeout: 1_000,
      connectionTimeoutMillis: 1_000,
    });
    const stores = postgresStores(proxied, { schema });
    await stores.migrate();
    await partitionScenario(proxy, stores, postgresStores(direct, { schema }), {
      chain: paidLater,
      failsWithinMs: 2_500,
      closesWithinMs: 2_000,
      recovered: 'completed',
      shutdown: () => proxied.end(),
    });
  });
});
