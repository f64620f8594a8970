// chainkit/redis across processes with ioredis 5 (the suite: test/compat/redis-stores.suite.ts; the
// same suite runs with ioredis 6 in test/compat/ioredis-6.test.ts).
import Redis from 'ioredis';
import { redisStoresSuite } from '../compat/redis-stores.suite.js';

redisStoresSuite({
  label: 'ioredis-5',
  client: () => new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 }),
});
