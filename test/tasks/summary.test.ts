import { describe, expect, it } from 'vitest';
import { createRunner, taskSummary, taskTools } from 'chainkit';
import { createTaskStore } from 'chainkit/testing';

const ann = '0b7c6f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
const summaryOf = async (tasks: { title: string; completed?: boolean }[]) => {
  const store = createTaskStore({ users: { [ann]: tasks } });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
  const r = await runner.run(taskSummary, {}, { context: { userId: ann } });
  await runner.close();
  if (r.status !== 'completed') throw new Error(`summary ${r.status}`);
  return r.output;
};

describe('taskSummary completion_rate', () => {
  it('is a percentage: 2 of 4 completed is 50', async () => {
    const s = await summaryOf([
      { title: 'a', completed: true },
      { title: 'b', completed: true },
      { title: 'c' },
      { title: 'd' },
    ]);
    expect(s).toMatchObject({ total: 4, completed: 2, completion_rate: 50 });
  });

  it('is rounded to one decimal: 1 of 3 is 33.3, 2 of 3 is 66.7', async () => {
    expect((await summaryOf([{ title: 'a', completed: true }, { title: 'b' }, { title: 'c' }])).completion_rate).toBe(
      33.3,
    );
    expect(
      (await summaryOf([{ title: 'a', completed: true }, { title: 'b', completed: true }, { title: 'c' }]))
        .completion_rate,
    ).toBe(66.7);
  });

  it('is 100 when all are done and 0 with no tasks', async () => {
    expect((await summaryOf([{ title: 'a', completed: true }])).completion_rate).toBe(100);
    expect((await summaryOf([])).completion_rate).toBe(0);
  });
});
