// Waiting on another process's in-flight idempotent call, with ioredis 5 (the suite:
// test/compat/redis-idempotency.suite.ts; the same suite runs with ioredis 6 in test/compat/ioredis-6.test.ts).
import Redis from 'ioredis';
import { redisIdempotencySuite } from '../compat/redis-idempotency.suite.js';

redisIdempotencySuite({
  label: 'ioredis-5',
  client: () => new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 }),
});
