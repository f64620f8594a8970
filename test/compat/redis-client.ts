// What the shared Redis store suites need of a client, structurally: an ioredis 5 and an ioredis 6
// `Redis` both fit (their classes are not assignable to each other). See redis-stores.suite.ts.
import type { Redis } from 'ioredis';
import type { RedisClient } from 'chainkit/redis';

/** A MONITOR connection: every command the server receives. */
export interface MonitorClient {
  on(event: 'monitor', listener: (time: string, args: string[]) => void): unknown;
  disconnect(): void;
}

/** A client for the suites: what chainkit/redis takes, plus what the tests themselves send. */
export interface SuiteClient extends RedisClient, Pick<Redis, 'connect' | 'keys' | 'pttl' | 'disconnect'> {
  monitor(): Promise<MonitorClient>;
}

/** Makes a new client (lazyConnect: the suite connects it). */
export type ClientFactory = () => SuiteClient;

/** Which client a suite runs with: a label for names and key prefixes, the factory, and the node args a worker process needs to use the same client. */
export interface SuiteOptions {
  label: string;
  client: ClientFactory;
  /** Extra `node` arguments for worker processes (e.g. an `--import` hook mapping 'ioredis' to another major). */
  workerNodeArgs?: readonly string[];
}
