// Secrets never leave in text (API.md §6): masked in messages, traces, events, logs, candidates and model results.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  ref,
  toModelResult,
  type InvokeResult,
  type Logger,
  type RunnerOptions,
  type RunResult,
} from 'chainkit';
import { SECRET_KEY } from '../../src/util/redact.js';
import { createMockInvoker, type MockScript } from 'chainkit/testing';
import { maskText, secretMask } from '../../src/observe/redact.js';
import { isSecretKey } from '../../src/util/redact.js';

/** A runner whose events and log lines are all kept, to search them for leaks. */
function watched(script: MockScript, options: Partial<RunnerOptions> = {}) {
  const seen: unknown[] = [];
  const log =
    (level: string): Logger['info'] =>
    (obj, msg) => {
      seen.push({ level, obj, msg });
    };
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  const invoker = createMockInvoker(script);
  const runner = createRunner({ invoker, logger, random: () => 0, ...options });
  for (const name of ['step:end', 'chain:end', 'step:retry'] as const)
    runner.events.on(name, (e: unknown) => {
      seen.push({ name, e });
    });
  return { runner, invoker, seen };
}

/** Everything chainkit wrote about a run but the app's own data (`completed` holds raw step results). */
function written(result: RunResult | InvokeResult, seen: unknown[]): string {
  const { completed: _data, ...rest } = result as RunResult & { completed?: unknown };
  return JSON.stringify({
    rest,
    model: 'chain' in result && result.chain !== undefined ? toModelResult(result as RunResult) : undefined,
    seen,
  });
}

const fast = { retries: 1, minDelayMs: 1, factor: 1, maxDelayMs: 1 };

describe('the default secret-key pattern', () => {
  const hidden = [
    'password',
    'Password',
    'PASSWORD',
    'user_password',
    'userPassword',
    'passwords',
    'passwd',
    'db_pass',
    'dbPass',
    'DB_PASS',
    'pwd',
    'passphrase',
    'secret',
    'client_secret',
    'clientSecret',
    'CLIENT_SECRET',
    'secrets',
    'aws_secret_access_key',
    'secretAccessKey',
    'token',
    'access_token',
    'accessToken',
    'refresh_token',
    'refreshToken',
    'GITHUB_TOKEN',
    'authToken',
    'accesstoken',
    'id_token',
    'csrfToken',
    'session_token',
    'sessionToken',
    'x-amz-security-token',
    'apiKey',
    'api_key',
    'api-key',
    'x-api-key',
    'APIKey',
    'API_KEY',
    'apikey',
    'api_keys',
    'privateKey',
    'private_key',
    'PRIVATE_KEY',
    'accessKey',
    'access_key',
    'signing_key',
    'encryptionKey',
    'session_key',
    'authorization',
    'Authorization',
    'proxy-authorization',
    'auth',
    'basic_auth',
    'proxyAuth',
    'cookie',
    'Cookie',
    'set-cookie',
    'cookies',
    'credential',
    'credentials',
    'jwt',
    'JWT',
    'id_jwt',
    'session',
    'user_session',
    'signature',
    'x-amz-signature',
    'requestSignature',
    'dsn',
    'sentry_dsn',
    'SENTRY_DSN',
    'bearer',
    'bearer_token',
    'otp',
    'totp',
    'connection_string',
    'connectionString',
    'access_tokens',
    'refreshTokens',
    'auth_tokens',
    'id_tokens',
    'apiTokens',
  ];
  const shown = [
    'tokens',
    'max_tokens',
    'maxTokens',
    'MAX_TOKENS',
    'tokens_used',
    'tokensUsed',
    'input_tokens',
    'token_count',
    'tokenCount',
    'token_type',
    'tokenizer',
    'passenger',
    'passengers',
    'passed',
    'bypass',
    'compass',
    'pass_count',
    'passwordless',
    'secretary',
    'sessionId',
    'session_id',
    'SessionID',
    'title',
    'description',
    'author',
    'authored',
    'oauth_provider',
    'auth_method',
    'key',
    'keyword',
    'sort_key',
    'idempotencyKey',
    'idempotency_key',
    'monkey',
    'keyboard',
    'signature_method',
    'user_id',
    'userId',
    'priority',
    'status',
    'cookbook',
    'pinned',
    'pin',
    'design',
    'assignee',
  ];
  it.each(hidden)('hides %s', (key) => expect([SECRET_KEY.test(key), isSecretKey(key)]).toEqual([true, true]));
  it.each(shown)('shows %s', (key) => expect([SECRET_KEY.test(key), isSecretKey(key)]).toEqual([false, false]));
});

describe('masking text', () => {
  it('masks the values of secret-named keys in key=value, "key": "value" and key: value text', () => {
    expect(maskText('login failed: password=hunter2')).toBe('login failed: password=[REDACTED]');
    expect(maskText('body {"user":"ann","password":"hunter2"} rejected')).toBe(
      'body {"user":"ann","password":"[REDACTED]"} rejected',
    );
    expect(maskText("{'api_key': 'sk-1234'}")).toBe("{'api_key': '[REDACTED]'}");
    expect(maskText('Error: token: abc123, retry')).toBe('Error: token: [REDACTED], retry');
    expect(maskText('GET /x?user=ann&access_token=abc123&page=2')).toBe(
      'GET /x?user=ann&access_token=[REDACTED]&page=2',
    );
    expect(maskText('header Authorization: Bearer eyJhbGciOi.payload.sig sent')).toBe(
      'header Authorization: [REDACTED] sent',
    );
    expect(maskText('sent Bearer eyJhbGciOi.payload.sig to upstream')).toBe('sent Bearer [REDACTED] to upstream');
    expect(maskText('cannot reach postgres://admin:hunter2@db:5432/app')).toBe(
      'cannot reach postgres://admin:[REDACTED]@db:5432/app',
    );
  });

  it("leaves ordinary text and chainkit's own schema messages readable", () => {
    for (const text of [
      "Input for tool login (step l) at 'password': Invalid input: expected string, received number.",
      'max_tokens=100 exceeded; tokens_used: 120',
      'passenger: Ann',
      'sessionId=s-1 status: 503',
      'the bearer of bad news',
    ])
      expect(maskText(text)).toBe(text);
  });

  it('masks the literal values of secret fields wherever they appear, but not short ones', () => {
    const mask = secretMask(
      (key) => key === 'ssn',
      { api_key: 'sk-live-abcdef', password: 'a' },
      { ssn: '123-45-6789' },
      { nested: { credentials: { user: 'bob-the-admin', pin: 987654 } } },
    );
    expect(mask.text('bad key sk-live-abcdef for ssn 123-45-6789 (bob-the-admin, 987654)')).toBe(
      'bad key [REDACTED] for ssn [REDACTED] ([REDACTED], [REDACTED])',
    );
    expect(mask.text('a failed')).toBe('a failed'); // a one-letter secret would mask every "a"
    expect(mask.text('bad key "sk-live-abcdef"')).not.toContain('sk-live');
    expect(mask.data([{ title: 'x', ssn: '1', note: 'uses sk-live-abcdef' }])).toEqual([
      { title: 'x', ssn: '[REDACTED]', note: 'uses [REDACTED]' },
    ]);
  });

  it('never throws, whatever the sources or the message', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const hostile = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('no keys');
        },
      },
    );
    const getter = Object.defineProperty({}, 'password', {
      enumerable: true,
      get: () => {
        throw new Error('no');
      },
    });
    const mask = secretMask(
      () => {
        throw new Error('rule bug');
      },
      proxy,
      hostile,
      getter,
      { token: 'tok-12345' },
    );
    expect(mask.text('tok-12345 and title=x')).toBe('[REDACTED] and title=[REDACTED]'); // a throwing rule hides: fail closed
    expect(mask.text(undefined as unknown as string)).toBeUndefined();
  });

  it('cuts a huge message before masking it', () => {
    const text = maskText(`password=hunter2 ${'x'.repeat(1_000_000)}`);
    expect(text.length).toBeLessThan(21_000);
    expect(text).toMatch(/^password=\[REDACTED\] x+… \(\d+ more characters\)$/);
  });
});

describe('secrets in failures', () => {
  const login = defineTool({
    name: 'login',
    description: 'l',
    input: z.object({ user: z.string() }),
    output: z.object({ ok: z.boolean() }),
    effect: 'read',
  });
  const loginChain = defineChain({
    name: 'login_chain',
    input: z.object({}),
    steps: [{ id: 'l', tool: login, input: { user: 'ann' } }],
  });

  it("a tool's error text with password=hunter2 reaches no message, trace, event, log line or model result", async () => {
    const { runner, seen } = watched(
      { login: { error: Object.assign(new Error('login failed: password=hunter2'), { status: 503 }) } },
      { retry: { unavailable: fast } },
    );
    const r = await runner.run(loginChain, {});
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.error.message).toContain('password=[REDACTED]');
    expect(r.error.userMessage).not.toContain('hunter2');
    expect(seen.some((s) => (s as { name?: string }).name === 'step:retry')).toBe(true);
    expect(seen.some((s) => (s as { level?: string }).level === 'error')).toBe(true);
    expect(written(r, seen)).not.toContain('hunter2');
  });

  const charge = defineTool({
    name: 'charge',
    description: 'c',
    input: z.object({ api_key: z.string(), amount: z.number() }),
    output: z.object({ ok: z.boolean() }),
    effect: 'read',
  });
  const chargeChain = defineChain({
    name: 'charge_chain',
    input: z.object({ key: z.string() }),
    steps: [{ id: 'pay', tool: charge, input: { api_key: ref('input', 'key'), amount: 5 } }],
  });

  it('a tool that echoes the secret value of its input, thrown or in-band, is masked', async () => {
    for (const answer of [
      { error: new Error('bad key sk-live-abcdef') },
      { ok: { status: 'error', error: 'invalid_input', message: 'key sk-live-abcdef is revoked' } },
    ]) {
      const { runner, seen } = watched({ charge: answer }, { traceDetail: 'full' });
      const r = await runner.run(chargeChain, { key: 'sk-live-abcdef' });
      expect(r.status).toBe('failed');
      expect(r.status === 'failed' && r.error.message).toContain('[REDACTED]');
      expect(written(r, seen)).not.toContain('sk-live-abcdef');
    }
  });

  it('a direct invoke is masked the same way', async () => {
    const { runner, seen } = watched(
      { charge: { error: new Error('bad key sk-live-abcdef') } },
      { tools: [charge], traceDetail: 'full' },
    );
    const r = await runner.invoke('charge', { api_key: 'sk-live-abcdef', amount: 1 });
    expect(r.status).toBe('failed');
    expect(written(r, seen)).not.toContain('sk-live-abcdef');
  });

  it("secret values of the chain's input and context are masked, also where a step copied them under another name", async () => {
    const note = defineTool({
      name: 'note',
      description: 'n',
      input: z.object({ text: z.string() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
    });
    const chain = defineChain({
      name: 'note_chain',
      input: z.object({ password: z.string() }),
      steps: [{ id: 'n', tool: note, input: { text: ref('input', 'password') } }],
    });
    const { runner, seen } = watched(
      {
        note: (i: { text: string }) => {
          throw new Error(`rejected ${i.text} for ctx-tok-99999`);
        },
      },
      { traceDetail: 'full' },
    );
    const r = await runner.run(
      chain,
      { password: 'correct-horse' },
      { context: { userId: 'u1', authToken: 'ctx-tok-99999' } },
    );
    expect(r.status).toBe('failed');
    const text = written(r, seen);
    expect(text).not.toContain('correct-horse'); // also in the trace's (redacted) step input, where it sits under `text`
    expect(text).not.toContain('ctx-tok-99999');
    expect(r.status === 'failed' && r.error.message).toBe('Error: rejected [REDACTED] for [REDACTED]');
  });

  it('ambiguous candidates show no secret-named fields in the result, trace, events or model result', async () => {
    const list = defineTool({
      name: 'list',
      description: 'l',
      input: z.object({}),
      output: z.object({ items: z.array(z.object({ title: z.string(), password: z.string(), ssn: z.string() })) }),
      effect: 'read',
    });
    const chain = defineChain({
      name: 'pick',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: {} },
        { id: 'one', select: { from: ref('find', 'items'), where: { title: { contains: 'x' } }, expect: 'one' } },
      ],
    });
    const items = [
      { title: 'x one', password: 'hunter2', ssn: '111-22-3333' },
      { title: 'x two', password: 'hunter3', ssn: '444-55-6666' },
    ];
    const { runner, seen } = watched({ list: { ok: { items } } }, { redact: (key) => key === 'ssn' });
    const r = await runner.run(chain, {});
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.error.candidates).toEqual([
      { title: 'x one', password: '[REDACTED]', ssn: '[REDACTED]' },
      { title: 'x two', password: '[REDACTED]', ssn: '[REDACTED]' },
    ]);
    const text = written(r, seen);
    for (const secret of ['hunter2', 'hunter3', '111-22-3333', '444-55-6666']) expect(text).not.toContain(secret);
    expect(items[0]!.password).toBe('hunter2'); // the tool's data is not changed
  });

  it("the user's redact rule is respected in error text too", async () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'l',
      input: z.object({ ssn: z.string() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
    });
    const chain = defineChain({
      name: 'lookup_chain',
      input: z.object({}),
      steps: [{ id: 'l', tool: lookup, input: { ssn: '123-45-6789' } }],
    });
    const { runner, seen } = watched(
      { lookup: { error: new Error('record 123-45-6789 locked; other ssn=987-65-4321') } },
      { redact: (key) => key === 'ssn' },
    );
    const r = await runner.run(chain, {});
    expect(r.status).toBe('failed');
    const text = written(r, seen);
    expect(text).not.toContain('123-45-6789');
    expect(text).not.toContain('987-65-4321');
  });

  it('a failed compensation is masked in its error and its log line', async () => {
    const reserve = defineTool({
      name: 'reserve',
      description: 'r',
      input: z.object({ token: z.string() }),
      output: z.object({ id: z.string() }),
      effect: 'write',
    });
    const release = defineTool({
      name: 'release',
      description: 'r',
      input: z.object({ id: z.string(), token: z.string() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'write',
      retry: false,
    });
    const fail = defineTool({
      name: 'fail',
      description: 'f',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'write',
      retry: false,
    });
    const chain = defineChain({
      name: 'undo',
      input: z.object({ token: z.string() }),
      steps: [
        {
          id: 'r',
          tool: reserve,
          input: { token: ref('input', 'token') },
          compensate: { tool: release, input: { id: ref('r', 'id'), token: ref('input', 'token') } },
        },
        { id: 'f', tool: fail, input: {} },
      ],
    });
    const { runner, seen } = watched({
      reserve: { ok: { id: 'r1' } },
      release: (i: { token: string }) => {
        throw new Error(`release refused for ${i.token}`);
      },
      fail: { error: Object.assign(new Error('nope'), { status: 409 }) },
    });
    const r = await runner.run(chain, { token: 'tok-abcdef-123' });
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.compensationFailures?.[0]?.error.message).toContain('[REDACTED]');
    expect(written(r, seen)).not.toContain('tok-abcdef-123');
  });

  it('model results are masked even for a result built elsewhere', () => {
    const result = {
      status: 'failed',
      runId: 'r',
      chain: 'c',
      completed: {},
      compensated: [],
      metadata: {} as never,
      trace: {
        traceId: 't',
        runId: 'r',
        chain: 'c',
        startedAt: '',
        endedAt: '',
        totalLatencyMs: 0,
        status: 'failed',
        steps: [],
      },
      error: {
        category: 'unknown',
        code: 'unknown',
        message: 'Error: password=hunter2',
        userMessage: 'x',
        suggestions: [],
        alternatives: [],
        retryable: false,
        attempts: 1,
        candidates: [{ apiKey: 'sk-9999' }],
      },
    } as RunResult;
    const model = toModelResult(result);
    expect(JSON.stringify(model)).not.toMatch(/hunter2|sk-9999/);
    expect(result.status === 'failed' && result.error.message).toBe('Error: password=hunter2'); // the result itself is not changed
  });
});

describe('the original error handed to the logger', () => {
  it('reaches logger.error as `err` with its type and stack, secrets masked', async () => {
    const login = defineTool({
      name: 'login',
      description: 'Log in',
      input: z.object({ user: z.string(), password: z.string() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
      retry: false,
    });
    const { runner, seen } = watched({
      login: {
        error: Object.assign(new TypeError('login failed for hunter2-pass: password=hunter2-pass'), {
          code: 'E_LOGIN',
        }),
      },
    });
    const chain = defineChain({
      name: 'log_in',
      input: z.object({ password: z.string() }),
      steps: [{ id: 'in', tool: login, input: { user: 'ada', password: ref('input', 'password') } }],
    });
    const r = await runner.run(chain, { password: 'hunter2-pass' });
    expect(r.status).toBe('failed');
    const entry = seen.find(
      (s): s is { level: string; obj: { err?: Error & { code?: string } } } =>
        (s as { level?: string }).level === 'error',
    );
    const err = entry?.obj.err;
    expect(err).toBeInstanceOf(Error);
    expect(err?.name).toBe('TypeError');
    expect(err?.code).toBe('E_LOGIN');
    expect(`${err?.message} ${err?.stack}`).not.toContain('hunter2');
    expect(err?.message).toContain('login failed');
    await runner.close();
  });
});
