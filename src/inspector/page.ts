// The page's HTML: a shell that loads the built script and stylesheet from the inspector's own path
// (no inline script or style, nothing from another origin) and carries the anti-CSRF token.

const escapeAttr = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const LIVE_STATUS = '<p id="live" class="live" role="status" aria-live="polite">connecting…</p>';

/**
 * The page for an inspector mounted at `base`, with the action token `token`.
 *
 * @example
 * ```ts
 * pageHtml('/ops/chains', token); // '<!doctype html>…'
 * ```
 */
export function pageHtml(base: string, token: string): string {
  const b = escapeAttr(base);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="chainkit-csrf" content="${escapeAttr(token)}">
<meta name="chainkit-base" content="${b}">
<title>chainkit inspector</title>
<link rel="stylesheet" href="${b}/app.css">
<script src="${b}/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><h1><a href="#/">chainkit inspector</a></h1>${LIVE_STATUS}</header>
<main id="main" tabindex="-1"><noscript>The inspector needs JavaScript.</noscript></main>
</body>
</html>
`;
}
