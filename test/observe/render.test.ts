import { describe, expect, it } from 'vitest';
import { formatTrace, type Trace } from 'chainkit';

describe('formatTrace', () => {
  it('draws one line per step with offsets, durations, attempts and errors', () => {
    const t0 = Date.parse('2026-01-01T00:00:00.000Z');
    const at = (ms: number) => new Date(t0 + ms).toISOString();
    const trace: Trace = {
      traceId: 't',
      runId: 'run1',
      chain: 'demo',
      startedAt: at(0),
      endedAt: at(400),
      totalLatencyMs: 400,
      status: 'failed',
      steps: [
        {
          stepNumber: 1,
          id: 'find',
          tool: 'list_tasks',
          status: 'success',
          attempts: 1,
          latencyMs: 100,
          startedAt: at(0),
        },
        {
          stepNumber: 2,
          id: 'delete',
          tool: 'delete_task',
          status: 'error',
          attempts: 3,
          latencyMs: 300,
          startedAt: at(100),
          error: {
            category: 'unavailable',
            code: 'http_503',
            message: '',
            userMessage: '',
            suggestions: [],
            alternatives: [],
            retryable: true,
            attempts: 3,
          },
        },
      ],
    };
    const lines = formatTrace(trace, { width: 20 }).split('\n');
    expect(lines[0]).toBe('demo  failed  400 ms  run run1');
    expect(lines[1]).toBe(' 1 find   list_tasks  █████                ✓ 100 ms');
    expect(lines[2]).toBe(' 2 delete delete_task      ███████████████ ✗ 300 ms ×3  unavailable/http_503');
  });
});
