/**
 * chainkit/testing: drive chains against scripted tools or the in-memory task backend.
 *
 * @module chainkit/testing
 */
export {
  createMockInvoker,
  type MockAnswer,
  type MockCall,
  type MockFunction,
  type MockInvoker,
  type MockScript,
  type TypedMockAnswer,
  type TypedMockFunction,
  type TypedMockScript,
} from './mock-invoker.js';
export {
  createTaskStore,
  type InBandError,
  type SeedTask,
  type TaskStore,
  type TaskStoreOptions,
} from './task-store.js';
export { fixtures } from './fixtures.js';
export { memoryRunStore, type MemoryRunStoreOptions } from '../stores/memory-runs.js';
