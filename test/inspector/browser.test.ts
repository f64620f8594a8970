// End to end in a real headless Chromium (puppeteer-core; the browser comes from the
// @sparticuz/chromium npm package; else Debian's /usr/bin/chromium; or CHROMIUM_PATH): the inspector mounted in a node:http app.
// Approve clicked twice → the tool runs once and the run shows completed; a running run cancelled
// from the page → its tool's signal aborts; a request without authorization → 401 and no data; the
// page works with the keyboard and at phone width. Saves a screenshot of a run's view in
// .artifacts/inspector.png (and docs/inspector.png with UPDATE_SCREENSHOTS=1).
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspector } from '../../src/inspector/index.js';
import { CONTEXT, failing, gated, INPUT, long, makeRunner, SECRETS, serve, until } from './setup.js';

// The callbacks given to page.evaluate/waitForFunction run in the page (puppeteer sends their source):
// the browser's globals, untyped here, where the project's program has no DOM types.
declare const document: any, location: any, window: any;

const BASE = '/ops/chains';
const SESSION = 'session=admin-7c1f';
const h = makeRunner();
let browser: Browser;
let origin: string;
let close: () => Promise<void>;

beforeAll(async () => {
  const handle = inspector(h.runner, {
    basePath: BASE,
    // The app's own check: a session cookie, else 401.
    authorize: (req) =>
      (req.headers.get('cookie') ?? '').includes(SESSION) ? true : new Response('Sign in first.', { status: 401 }),
    actor: () => 'ops:e2e',
  });
  ({ origin, close } = await serve(handle));
  if (process.env.CHROMIUM_PATH)
    browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM_PATH, headless: true });
  else {
    try {
      browser = await puppeteer.launch({
        executablePath: await chromium.executablePath(),
        args: chromium.args,
        headless: true,
      });
    } catch (error) {
      // The npm build needs a few system libraries; Debian's chromium package brings its own.
      if (!existsSync('/usr/bin/chromium')) throw error;
      browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'], headless: true });
    }
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await close?.();
  await h.runner.close();
});

async function openPage(hash = ''): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  (page as Page & { errors: string[] }).errors = errors;
  await browser.setCookie({ name: 'session', value: 'admin-7c1f', domain: '127.0.0.1', path: '/' });
  await page.goto(`${origin}${BASE}/${hash}`, { waitUntil: 'domcontentloaded' });
  return page;
}
const errorsOf = (page: Page): string[] => (page as Page & { errors: string[] }).errors;

describe('the inspector in Chromium', () => {
  it('shows a parked run in the inbox; Approve clicked twice → the tool is called once, the run shows completed within 1 s', async () => {
    const parked = await h.runner.run(gated, INPUT, { context: CONTEXT });
    const page = await openPage();
    // The runs list: a table with a Status column header; the inbox first, with the run's question (redacted).
    await page.waitForSelector('table.runs');
    expect(await page.$$eval('table.runs thead th', (ths) => ths.map((t) => t.textContent))).toContain('Status');
    const headings = await page.$$eval('main h2', (hs) => hs.map((x) => x.textContent ?? ''));
    expect(headings[0]).toMatch(/^Approvals inbox/);
    const inbox = await page.$eval('.inbox', (el) => el.textContent ?? '');
    expect(inbox).toContain(parked.runId);
    expect(inbox).toContain('[REDACTED]');
    for (const s of SECRETS) expect(inbox).not.toContain(s);

    const approve = await page.waitForSelector('::-p-aria(Approve)');
    await Promise.all([approve!.click(), approve!.click()]);
    // Within 1 s of the clicks (the spec's bound: the wait fails past it).
    await page.waitForFunction(
      (id) =>
        [...document.querySelectorAll('table.runs tbody tr')].some(
          (tr) => tr.querySelector('th')?.textContent === id && tr.querySelector('.badge')?.textContent === 'completed',
        ),
      { timeout: 1_000 },
      parked.runId,
    );
    expect(h.calls.pay).toBe(1);
    expect((await h.runner.getRun(parked.runId))?.decidedBy).toBe('ops:e2e');
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it('shows a new run live (server-sent events), and is usable with the keyboard: Decline by Tab and Enter', async () => {
    const page = await openPage();
    await page.waitForSelector('table.runs');
    await until(() => page.evaluate(() => document.getElementById('live')?.textContent === 'live'));
    const parked = await h.runner.run(gated, INPUT, { context: CONTEXT });
    // Pushed by the live stream (the list polls only every 5 s).
    await page.waitForFunction(
      (id) => document.querySelector('.inbox')?.textContent?.includes(id) === true,
      { timeout: 1_500 },
      parked.runId,
    );
    let found = false;
    for (let i = 0; i < 40 && !found; i++) {
      await page.keyboard.press('Tab');
      found = await page.evaluate((id) => {
        const el = document.activeElement;
        return el?.textContent === 'Decline' && el.closest('li')?.textContent?.includes(id) === true;
      }, parked.runId);
    }
    expect(found).toBe(true);
    // Another run arrives and the list is drawn again: the focus stays on this run's Decline.
    const other = await h.runner.run(gated, INPUT, { context: CONTEXT });
    await page.waitForFunction(
      (id) => document.querySelector('.inbox')?.textContent?.includes(id) === true,
      { timeout: 1_500 },
      other.runId,
    );
    expect(
      await page.evaluate((id) => {
        const el = document.activeElement;
        return el?.textContent === 'Decline' && el.closest('li')?.textContent?.includes(id) === true;
      }, parked.runId),
    ).toBe(true);
    await page.keyboard.press('Enter');
    await until(async () => (await h.runner.getRun(parked.runId))?.status === 'declined');
    expect((await h.runner.getRun(other.runId))?.status).toBe('awaiting_confirmation');
    await h.runner.decide(other.runId, { approved: false, by: 'ops:e2e' });
    await page.waitForFunction((id) => !document.querySelector('.inbox')?.textContent?.includes(id), {}, parked.runId);
    expect(h.calls.pay).toBe(1); // still only the approved run's
    await page.close();
  });

  it("cancels a running run from its page: the tool's signal aborts", async () => {
    const running = h.runner.run(long, { n: 1 }, { runId: 'long-e2e' });
    await until(() => h.calls.slowStarted === 1);
    const page = await openPage('#/run/long-e2e');
    await page.waitForSelector('.waterfall');
    expect(await page.$eval('.waterfall', (el) => el.textContent ?? '')).toContain('wait');
    // Half-typed signal: a re-render (another run's change, pushed live) keeps the text and the focus.
    await page.type('#sig-name', 'ready');
    await page.evaluate(() => (document.getElementById('sig-name').dataset.drawn = 'before'));
    const other = await h.runner.run(gated, INPUT, { context: CONTEXT });
    await page.waitForFunction(() => document.getElementById('sig-name')?.dataset.drawn === undefined);
    expect(await page.evaluate(() => [document.activeElement?.id, document.getElementById('sig-name').value])).toEqual([
      'sig-name',
      'ready',
    ]);
    await h.runner.decide(other.runId, { approved: false, by: 'ops:e2e' });
    // A locator finds the button when it clicks, and again if a live re-render (the decision above,
    // pushed to the page) replaced it in between; a handle found first can be detached by then.
    await page.locator('::-p-aria(Cancel run)').click();
    await until(() => h.calls.slowAborted === 1);
    const result = await running;
    expect(result.status === 'failed' && result.error.code).toBe('run_cancelled');
    await page.waitForFunction(() => document.querySelector('#run-h .badge')?.textContent === 'failed');
    expect(await page.$('::-p-aria(Cancel run)')).toBeNull();
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("shows a failed run's waterfall and redacted error, re-runs it from the page; screenshot of the run view", async () => {
    const failed = await h.runner.run(failing, INPUT, { runId: 'refund-42', context: CONTEXT });
    expect(failed.status).toBe('failed');
    const page = await openPage('#/run/refund-42');
    await page.waitForSelector('.waterfall');
    const text = await page.$eval('main', (el) => el.textContent ?? '');
    expect(text).toContain('[REDACTED]');
    for (const s of SECRETS) expect(text).not.toContain(s);
    mkdirSync('.artifacts', { recursive: true });
    await page.screenshot({ path: '.artifacts/inspector.png' });
    if (process.env.UPDATE_SCREENSHOTS === '1') copyFileSync('.artifacts/inspector.png', 'docs/inspector.png');

    h.calls.explodeFails = false;
    await page.locator('::-p-aria(Re-run)').click();
    await page.waitForFunction(() => location.hash === `#/run/${encodeURIComponent('refund-42~rerun1')}`);
    await page.waitForFunction(() => document.querySelector('#run-h .badge')?.textContent === 'completed');
    expect(await page.$eval('.meta', (el) => el.textContent ?? '')).toContain('Re-run ofrefund-42');
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("fits a phone's width", async () => {
    const page = await openPage();
    await page.setViewport({ width: 390, height: 844 });
    await page.waitForSelector('table.runs');
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.close();
  });

  it('answers a request without authorization with 401 and no data', async () => {
    const page = await browser.newPage();
    const cdp = await page.createCDPSession();
    await cdp.send('Network.clearBrowserCookies'); // no session cookie (one browser context: --single-process)
    const res = await page.goto(`${origin}${BASE}/`);
    expect(res?.status()).toBe(401);
    const body = await page.content();
    expect(body).not.toContain('refund-42');
    const api = await fetch(`${origin}${BASE}/api/overview`);
    expect(api.status).toBe(401);
    expect(await api.text()).not.toContain('refund-42');
    await page.close();
  });
});
