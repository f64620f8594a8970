// Ready-made users and tasks for tests and demos.
import type { SeedTask } from './task-store.js';

const alice = '6f1d2c3b-4a5e-4f60-8a7b-1c2d3e4f5a6b';
const bob = '0b9a8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d';

/**
 * Two users with a realistic mix of tasks.
 *
 * @example
 * ```ts
 * const store = createTaskStore({ users: fixtures.users });
 * await runner.run(findAndComplete, { match: 'milk' }, { context: { userId: fixtures.alice } });
 * ```
 */
export const fixtures = Object.freeze({
  alice,
  bob,
  users: Object.freeze({
    [alice]: [
      { title: 'Buy groceries', priority: 'high' },
      { title: 'Buy milk', priority: 'medium' },
      { title: 'Call mom', completed: true, priority: 'medium' },
      { title: 'Dentist appointment', priority: 'high' },
      { title: 'Read a book', completed: true, priority: 'low' },
    ],
    [bob]: [
      { title: 'Fix the bike', priority: 'low' },
      { title: 'File taxes', priority: 'high' },
    ],
  } as Record<string, SeedTask[]>),
});
