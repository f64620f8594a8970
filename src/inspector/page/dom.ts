// The page's small parts: elements built as text only, the API calls, notices, and the routes.
import type { Json, Caps } from './types.js';

const meta = (name: string): string => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';
export const BASE = meta('chainkit-base');
const TOKEN = meta('chainkit-csrf');
export const STATUSES = ['awaiting_confirmation', 'running', 'failed', 'completed', 'declined'];
export const LABEL: Record<string, string> = {
  awaiting_confirmation: 'awaiting approval',
  running: 'running',
  failed: 'failed',
  completed: 'completed',
  declined: 'declined',
};

export type Child = Node | string | number | null | undefined | false | Child[];
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | number | ((e: Event) => void) | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}
export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}
const SVG = 'http://www.w3.org/2000/svg';
export function s(tag: string, attrs: Record<string, string | number>, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

export const ms = (n: number | undefined): string =>
  n === undefined || !Number.isFinite(n)
    ? '–'
    : n < 1000
      ? `${Math.round(n)} ms`
      : n < 60_000
        ? `${(n / 1000).toFixed(1)} s`
        : `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`;
export const when = (t: number | string | undefined): string => (t === undefined ? '–' : new Date(t).toLocaleString());
export const badge = (status: string): HTMLElement =>
  h('span', { class: `badge s-${status}` }, LABEL[status] ?? status);
export const runLink = (id: string): HTMLAnchorElement => h('a', { href: `#/run/${encodeURIComponent(id)}` }, id);
export const pretty = (v: unknown): string => JSON.stringify(v, null, 2) ?? String(v);

export async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${BASE}${path}`, { credentials: 'same-origin', headers: { accept: 'application/json' } });
  if (!res.ok)
    throw new Error(`${res.status} ${((await res.json().catch(() => ({}))) as Json).error ?? res.statusText}`);
  return (await res.json()) as T;
}
export async function act(body: Json): Promise<Json> {
  const res = await fetch(`${BASE}/api/action`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-chainkit-csrf': TOKEN },
    body: JSON.stringify(body),
  });
  const out = (await res.json().catch(() => ({}))) as Json;
  if (res.status >= 500 || res.status === 403 || res.status === 400)
    throw new Error(String(out.error ?? res.statusText));
  return out;
}

export const main = (): HTMLElement => document.getElementById('main')!;
export const live = (text: string): void => {
  const el = document.getElementById('live');
  if (el) el.textContent = text;
};
let note: HTMLElement | undefined;
export function say(text: string, bad = false): void {
  note?.remove();
  note = h('p', { class: bad ? 'note bad' : 'note', role: bad ? 'alert' : 'status' }, text);
  main().prepend(note);
}

/** A button that runs `fn` once at a time (a second click while it runs does nothing). */
export function actionButton(label: string, cls: string, fn: () => Promise<void>, id?: string): HTMLButtonElement {
  // An id lets a re-render (live events, the poll) give the focus back to the same button.
  const b = h('button', { type: 'button', class: cls, id }, label);
  b.addEventListener('click', () => {
    if (b.disabled) return;
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    fn()
      .catch((e: unknown) => say(e instanceof Error ? e.message : String(e), true))
      .finally(() => {
        b.disabled = false;
        b.removeAttribute('aria-busy');
      });
  });
  return b;
}

export function decideButtons(runId: string, caps: Caps, after: () => void): HTMLElement | null {
  if (caps.readOnly) return null;
  const decide = (approved: boolean) => async () => {
    const r = await act({ action: 'decide', runId, approved });
    say(
      r.outcome === 'decided'
        ? `Run ${runId}: ${approved ? 'approved' : 'declined'} (${String(r.status)}).`
        : `Run ${runId} was decided already (${String(r.outcome)}).`,
    );
    after();
  };
  return h(
    'span',
    { class: 'actions' },
    actionButton('Approve', 'primary', decide(true), `approve-${runId}`),
    actionButton('Decline', '', decide(false), `decline-${runId}`),
  );
}

/** The view the location names: the runs list, or one run. */
export function route(): { view: 'list' } | { view: 'run'; id: string } {
  const m = /^#\/run\/(.+)$/.exec(location.hash);
  return m ? { view: 'run', id: decodeURIComponent(m[1]!) } : { view: 'list' };
}

let refreshView: () => Promise<void> = async () => {};
/** Shows the current view again (the list and a run refresh after acting). */
export const refresh = (): Promise<void> => refreshView();
/** Sets what `refresh` does: app.ts routes between the views. */
export function onRefresh(fn: () => Promise<void>): void {
  refreshView = fn;
}
