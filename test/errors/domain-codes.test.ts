import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineTool,
  findAndUpdate,
  functionInvoker,
  isDefinitionError,
  taskChains,
  taskTools,
  type Classifier,
} from 'chainkit';
import { classifyError } from '../../src/errors/classify.js';
import { createTaskStore, fixtures } from 'chainkit/testing';
import { codeClassifier } from '../../src/errors/classify.js';
import { taskErrors } from '../../src/tasks/tools.js';

// A domain's own error codes plug in through `classifiers` — the task domain's exactly as a user's.
describe('domain error codes through the public classifier hook', () => {
  it('the core classifier no longer knows the task domain: invalid_task_id is unknown until the task classifier is given', () => {
    expect(classifyError({ error: 'invalid_task_id' }).category).toBe('unknown');
    expect(classifyError({ error: 'invalid_task_id' }, [taskErrors])).toMatchObject({
      category: 'not_found',
      code: 'invalid_task_id',
    });
    expect(classifyError(Object.assign(new Error('gone'), { code: 'task_not_found' }), [taskErrors]).category).toBe(
      'not_found',
    );
  });

  it('every task tool carries the task classifier, so the task chains classify their codes as before when run the documented way', async () => {
    expect(taskTools.every((t) => t.classifiers?.includes(taskErrors))).toBe(true);
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
    const missing = await runner.invoke(
      'update_task',
      { user_id: fixtures.alice, task_id: '99999999-9999-4999-8999-999999999999', title: 'x' },
      { context: { userId: fixtures.alice } },
    );
    expect(missing.status === 'failed' && missing.error).toMatchObject({
      category: 'not_found',
      code: 'invalid_task_id',
      retryable: false,
      attempts: 1,
    });
    const ok = await runner.run(
      findAndUpdate,
      { match: 'dentist', title: 'Dentist 3pm' },
      { context: { userId: fixtures.alice } },
    );
    expect(ok.status).toBe('completed');
    await runner.close();
  });

  const billingErrors = codeClassifier({
    card_declined: 'invalid_input',
    ledger_locked: 'conflict',
    gateway_busy: 'unavailable',
  });
  const charge = (classifiers?: Classifier[]) =>
    defineTool({
      name: 'charge',
      description: 'Charge a card',
      input: z.object({ cents: z.number() }),
      output: z.object({ id: z.string() }),
      effect: 'read',
      retry: false,
      ...(classifiers && { classifiers }),
    });

  it("a user's domain does the same: its tool's codes are classified, in-band or thrown, with Retry-After kept", async () => {
    const answers: unknown[] = [
      { status: 'error', error: 'card_declined', message: 'Insufficient funds' },
      { status: 'error', error: 'gateway_busy', retry_after: 3 },
    ];
    const invoker = functionInvoker({
      charge: ({ cents }: { cents: number }) => {
        if (cents < 0) throw Object.assign(new Error('the ledger is locked'), { code: 'ledger_locked' });
        return answers[cents];
      },
    });
    const runner = createRunner({ invoker, tools: [charge([billingErrors])] });
    const declined = await runner.invoke('charge', { cents: 0 });
    expect(declined.status === 'failed' && declined.error).toMatchObject({
      category: 'invalid_input',
      code: 'card_declined',
      message: expect.stringContaining('Insufficient funds'),
    });
    const busy = await runner.invoke('charge', { cents: 1 });
    expect(busy.status === 'failed' && busy.error).toMatchObject({
      category: 'unavailable',
      code: 'gateway_busy',
      retryAfterMs: 3000,
    });
    const locked = await runner.invoke('charge', { cents: -1 });
    expect(locked.status === 'failed' && locked.error).toMatchObject({ category: 'conflict', code: 'ledger_locked' });
    await runner.close();

    // The same codes from a tool that does not carry the classifier are not known.
    const plain = createRunner({ invoker, tools: [charge()] });
    const unknown = await plain.invoke('charge', { cents: 0 });
    expect(unknown.status === 'failed' && unknown.error.category).toBe('unknown');
    await plain.close();
  });

  it("the runner's classifiers see in-band results too, so a domain can also be plugged in for every tool", async () => {
    const invoker = functionInvoker({ charge: () => ({ status: 'error', error: 'ledger_locked' }) });
    const runner = createRunner({ invoker, tools: [charge()], classifiers: [billingErrors] });
    const r = await runner.invoke('charge', { cents: 1 });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'conflict', code: 'ledger_locked' });
    await runner.close();
  });

  it('looks codes up as own keys only, and refuses a table with a category that does not exist', () => {
    expect(classifyError({ error: 'constructor' }, [billingErrors]).category).toBe('unknown');
    expect(classifyError({ error: 'toString' }, [billingErrors]).category).toBe('unknown');
    expect(() => codeClassifier({ oops: 'not_a_category' } as never)).toThrow(/oops/);
    expect(() => codeClassifier(null as never)).toThrow(TypeError);
  });

  it('refuses classifiers on a tool that are not an array of functions', () => {
    try {
      charge(['nope'] as never);
      expect.unreachable();
    } catch (error) {
      expect(isDefinitionError(error) && error.issues).toEqual([
        {
          path: 'classifiers',
          message: 'Expected `classifiers` to be an array of functions (error) => Classified | undefined.',
        },
      ]);
    }
  });
});
