// The inspector's page: plain DOM, no framework. Built by scripts/build-inspector.mjs into
// src/inspector/assets.ts (minified) and served from the inspector's own path. Text is only ever
// set as text (never parsed as HTML); styles come from app.css (the CSP allows no inline style).
// The parts: types.ts (the API's shapes), dom.ts (elements, API calls, notices, routes), list.ts and
// health.ts (the runs list), run.ts (one run); this file routes between them and keeps them live.
import { BASE, live, main, route, refresh, onRefresh, say } from './dom.js';
import { showList } from './list.js';
import { forgetRun, leaveRun, showRun } from './run.js';

onRefresh(async function refresh(): Promise<void> {
  const r = route();
  try {
    if (r.view === 'run') await showRun(r.id);
    else {
      leaveRun();
      await showList();
    }
  } catch (e) {
    say(e instanceof Error ? e.message : String(e), true);
  }
});

let listTimer: ReturnType<typeof setTimeout> | undefined;
function startLive(): void {
  const es = new EventSource(`${BASE}/api/live`);
  es.addEventListener('ready', () => live('live'));
  es.addEventListener('changed', () => {
    listTimer ??= setTimeout(() => {
      listTimer = undefined;
      void refresh();
    }, 30);
  });
  es.addEventListener('error', () => live('reconnecting…'));
  // Runs of other instances: read again now and then.
  setInterval(() => {
    if (route().view === 'list' && document.visibilityState === 'visible') void refresh();
  }, 5_000);
}

window.addEventListener('hashchange', () => {
  forgetRun();
  void refresh().then(() => main().focus());
});
void refresh();
startLive();
