// The dashboard's two HTML pages: the login form (served without a session) and the shell that loads
// the bundle (with one). Both are small and static; the data comes from the admin API.
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const head = (title: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<title>${esc(title)}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/assets/app.css"></head>`;

/** The login form; `error` is shown above it (a wrong token, the admin API off). */
export function loginPage(error?: string): string {
  return (
    `${head('sluice — log in')}<body class="login"><main><h1>sluice</h1>` +
    (error ? `<p class="error" role="alert" id="login-error">${esc(error)}</p>` : '') +
    `<form method="post" action="/ui/login"><label for="token">Admin token</label>` +
    `<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>` +
    `<button type="submit">Log in</button></form>` +
    `<p class="hint">The server's SLUICE_ADMIN_TOKEN. The session is a signed cookie (HttpOnly, SameSite=Strict) valid for 12 hours; the token itself is not kept.</p>` +
    `</main></body></html>`
  );
}

/** The app shell: the bundle draws everything into #app. */
export function appPage(): string {
  return `${head('sluice')}<body><div id="app"></div><script type="module" src="/ui/assets/app.js"></script></body></html>`;
}

/** What /ui says when the bundle is missing (a checkout where the build did not run). */
export function notBuiltPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sluice</title></head><body><p>The dashboard is not built: run <code>npm run build:ui</code>.</p></body></html>`;
}
