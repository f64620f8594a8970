// What runners learn, on Redis (chainkit/redis): two capped lists every process adds to.
import type { ToolTransition } from '../observe/trace.js';
import type { LearnedData, LearningStore, TimingSample } from '../stores/types.js';
import type { RedisClient } from './client.js';

/** Options of {@link redisLearningStore}. */
export interface RedisLearningOptions {
  prefix: string;
  /** Transitions kept. Default 10 000. */
  maxTransitions?: number;
  /** Timing samples kept (all tools together). Default 20 000. */
  maxSamples?: number;
}

/**
 * What runners learn, in two capped Redis lists: a new process loads it, every process adds to it.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { metrics: redisLearningStore(redis, { prefix: 'myapp' }) } });
 * await runner.ready; // estimates and suggestions now include what other instances learned
 * ```
 */
export function redisLearningStore(redis: RedisClient, options: RedisLearningOptions): LearningStore {
  const transitionsKey = `${options.prefix}:learn:transitions`;
  const samplesKey = `${options.prefix}:learn:samples`;
  const maxT = options.maxTransitions ?? 10_000;
  const maxS = options.maxSamples ?? 20_000;
  return {
    async load(): Promise<LearnedData> {
      const [t, s] = await Promise.all([redis.lrange(transitionsKey, 0, -1), redis.lrange(samplesKey, 0, -1)]);
      return {
        transitions: t.map((x) => JSON.parse(x) as ToolTransition),
        samples: s.map((x) => JSON.parse(x) as TimingSample),
      };
    },
    async append(batch) {
      const tx = redis.multi();
      if (batch.transitions.length)
        tx.rpush(transitionsKey, ...batch.transitions.map((t) => JSON.stringify(t))).ltrim(transitionsKey, -maxT, -1);
      if (batch.samples.length)
        tx.rpush(samplesKey, ...batch.samples.map((s) => JSON.stringify(s))).ltrim(samplesKey, -maxS, -1);
      await tx.exec();
    },
  };
}
