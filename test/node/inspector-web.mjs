// inspector-web.mjs: a person logs in to gemgate with the MCP Inspector 2.x web UI.
//
// Run by test/browser_inspector_web_test.go against Keycloak with deploy/keycloak/realm-gemgate.json
// and `gemgate serve` configured as the compose demo. It starts the Inspector's web UI
// (`mcp-inspector --web`, the bin of @modelcontextprotocol/inspector) on free loopback ports with
// a throwaway home, and headless Chromium (browser.mjs) does what docs/clients.md tells a user:
//
//   1. open the URL the Inspector prints (http://127.0.0.1:<port>?MCP_INSPECTOR_API_TOKEN=…);
//   2. "Add Servers" → "+ Add manually": Server ID "gemgate", Transport "streamable-http",
//      URL <gemgate's /mcp>, "Add";
//   3. the server card's connect switch: the Inspector registers itself with Keycloak and sends
//      the tab to Keycloak's login page; sign in, "Yes" on the consent page "Grant Access to
//      MCP Inspector"; the tab comes back to /oauth/callback and on to the UI, where the card
//      says "Connected" and the header names the server (gemgate-demo);
//   4. "Tools" in the header: the list shows the demo tools; "whoami", "Execute Tool": the
//      result reads `user=<user> session=… read_only=…`.
//
// Every page is saved as a screenshot into --shots. Prints one JSON line (no token, code or
// password) and exits 1 when an expectation fails, 2 on a crash or a timeout. The password
// comes from GEMGATE_USER_PASSWORD. Needs Node >= 22.19 (the Inspector): run it with the
// node_modules/node/bin/node of this folder; the Inspector runs on the same node.
//
// Usage: node inspector-web.mjs --url URL --user NAME --shots DIR [--timeout MS]

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { newReport } from './report.mjs';
import { User, freePort, inspector, launchBrowser } from './browser.mjs';

const { values: flags } = parseArgs({
  options: {
    url: { type: 'string' },
    user: { type: 'string' },
    shots: { type: 'string' },
    timeout: { type: 'string' },
  },
  strict: true,
});
const opt = {
  url: flags.url,
  user: flags.user,
  password: process.env.GEMGATE_USER_PASSWORD,
  shots: flags.shots,
  timeoutMs: Number(flags.timeout ?? 90000),
};
for (const k of ['url', 'user', 'password']) {
  if (!opt[k]) {
    console.error(`inspector-web: missing ${k} (see the usage at the top of inspector-web.mjs)`);
    process.exit(2);
  }
}
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  console.error(`inspector-web: the MCP Inspector needs Node >= 22.19, this is ${process.version}; run with node_modules/node/bin/node`);
  process.exit(2);
}

const serverId = 'gemgate';
const { report, fail, run } = newReport({ client: 'mcp-inspector-web', user: opt.user, url: opt.url, steps: [], pages: [] }, opt.timeoutMs);
const closers = [];
let browser;
let inspectorOut = '';

// step notes what the user did, for the report; a failure names the last step.
const step = (what) => report.steps.push(what);

// startInspector runs `mcp-inspector --web` and returns the URL it prints.
async function startInspector() {
  const insp = inspector();
  report.inspector_version = insp.version;
  // A throwaway home: the Inspector keeps its server list (~/.mcp-inspector/mcp.json) and OAuth
  // state there, and must neither read nor write the user's.
  const home = mkdtempSync(join(tmpdir(), 'gemgate-inspector-web-'));
  closers.push(() => rmSync(home, { recursive: true, force: true }));
  const [web, sandbox, appOrigin] = [await freePort(), await freePort(), await freePort()];
  const env = {
    PATH: process.env.PATH, HOME: home, NO_COLOR: '1', HOST: '127.0.0.1',
    CLIENT_PORT: String(web), MCP_SANDBOX_PORT: String(sandbox), MCP_APP_ORIGIN_PORT: String(appOrigin),
    MCP_AUTO_OPEN_ENABLED: 'false', // the test's browser opens the URL, not xdg-open
    MCP_INSPECTOR_SECRET_STORE: 'memory', // no keychain on a CI machine; nothing written
  };
  const child = spawn(process.execPath, [insp.bin, '--web'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((r) => child.once('close', (code, signal) => r({ code, signal })));
  closers.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    }
  });
  child.stdout.on('data', (d) => (inspectorOut += d));
  child.stderr.on('data', (d) => (inspectorOut += d));
  const printed = await Promise.race([
    new Promise((resolve) => {
      const look = () => {
        const m = inspectorOut.match(/https?:\/\/\S+\?MCP_INSPECTOR_API_TOKEN=\S+/);
        if (m) resolve(m[0]);
        else setTimeout(look, 100);
      };
      look();
    }),
    exited.then(({ code, signal }) => {
      throw new Error(`the Inspector exited (${signal ?? code}) before printing its URL: ${inspectorOut.slice(-1500)}`);
    }),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`the Inspector printed no URL within 30 s: ${inspectorOut.slice(-1500)}`)), 30000).unref()),
  ]);
  const u = new URL(printed);
  report.inspector = { origin: u.origin, has_api_token: Boolean(u.searchParams.get('MCP_INSPECTOR_API_TOKEN')), port: web };
  return u;
}

// The web UI is React with Mantine components: buttons and labels are found by their text,
// form fields by their label, as a person finds them.
async function clickButton(page, text, role = 'button') {
  const el = await page.waitForFunction(
    (text, role) => [...document.querySelectorAll(role === 'button' ? 'button' : `[role="${role}"]`)].find((e) => e.textContent.trim() === text && !e.disabled),
    { timeout: 15000 }, text, role,
  ).catch(() => null);
  if (!el?.asElement()) throw new Error(`no ${role} "${text}" on the page`);
  await el.asElement().click();
}

async function field(page, label) {
  const el = await page.waitForFunction(
    (label) => {
      const l = [...document.querySelectorAll('label')].find((e) => e.textContent.replace('*', '').trim() === label);
      return l?.htmlFor ? document.getElementById(l.htmlFor) : null;
    },
    { timeout: 15000 }, label,
  ).catch(() => null);
  if (!el?.asElement()) throw new Error(`no field labelled "${label}"`);
  return el.asElement();
}

// networkPanel is what the Inspector's Network panel lists: status, URL (without query).
async function networkPanel(page) {
  const text = await bodyText(page);
  return [...text.matchAll(/(\d{3} [A-Z][A-Z ]*)\n⎘\n+(https?:\/\/\S+)/g)].map((m) => `${m[1]} ${m[2].split('?')[0]}`);
}

// settle lets the UI's transitions (fades between views) end before a screenshot.
const settle = () => new Promise((r) => setTimeout(r, 400));

const bodyText = (page) => page.evaluate(() => document.body?.innerText ?? '').catch(() => '');

// cardStatus is the status the gemgate server card shows next to its switch.
const cardStatus = (page) => page.evaluate((id) => {
  const sw = document.querySelector(`input[role="switch"][aria-label="Connect or disconnect \\"${id}\\""]`);
  if (!sw) return null;
  let card = sw;
  while (card.parentElement && !card.innerText?.includes('Streamable HTTP')) card = card.parentElement;
  const text = card.innerText ?? '';
  return { checked: sw.checked, status: ['Connected', 'Connecting...', 'Disconnected', 'Failed', 'Error'].find((s) => text.split('\n').includes(s)) ?? text.slice(0, 200) };
}, serverId).catch(() => null);

async function main() {
  const app = await startInspector();
  step('inspector started');
  browser = await launchBrowser();
  report.browser = await browser.version();
  const user = new User(browser, { name: opt.user, password: opt.password, shots: opt.shots, log: report.pages });
  const page = await browser.newPage();
  closers.push(() => page.close().catch(() => {}));
  page.setDefaultTimeout(20000);
  await page.setViewport({ width: 1400, height: 900 });
  // What the page failed to load or logged as an error, for a failed run's report.
  const pageErrors = [];
  report.page_errors = pageErrors;
  const note = (msg) => pageErrors.length < 20 && pageErrors.push(msg.replace(/MCP_INSPECTOR_API_TOKEN=[^&\s]+/g, 'MCP_INSPECTOR_API_TOKEN=[token]').slice(0, 300));
  page.on('console', (m) => m.type() === 'error' && note(`console: ${m.text()}`));
  page.on('requestfailed', (req) => note(`request failed: ${req.url().split('?')[0]}: ${req.failure()?.errorText}`));
  let failed = true;
  try {
    // 1. The URL the Inspector printed, token and all.
    await page.goto(app.href, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => document.body?.innerText.includes('Add Servers'), { timeout: 30000 });
    await user.shot(page, 'inspector-start');
    step('opened the printed URL');

    // 2. Add the server.
    await clickButton(page, 'Add Servers');
    await clickButton(page, '+ Add manually', 'menuitem');
    await (await field(page, 'Server ID')).type(serverId);
    await (await field(page, 'Transport')).click();
    await clickButton(page, 'streamable-http', 'option');
    await (await field(page, 'URL')).type(opt.url);
    await user.shot(page, 'inspector-add-server');
    await clickButton(page, 'Add');
    // The dialog closes (it fades out, and a click meanwhile lands on its overlay) and the
    // server's card appears.
    await page.waitForFunction((id) => !document.querySelector('[role="dialog"], .mantine-Modal-overlay') &&
      document.querySelector(`input[role="switch"][aria-label="Connect or disconnect \\"${id}\\""]`), {}, serverId);
    step('added the server');

    // 3. Connect: the tab goes to Keycloak, and back.
    await page.click(`input[role="switch"][aria-label="Connect or disconnect \\"${serverId}\\""]`);
    step('clicked connect');
    const seen = { tag: 'inspector-web', pages: [], consent: null };
    report.pages.push(seen);
    // Either the tab leaves for the login page or the card gives up ("Failed", with the
    // Network panel open beside it).
    const away = await page.waitForFunction((origin, id) => {
      if (location.origin !== origin) return true;
      const sw = document.querySelector(`input[role="switch"][aria-label="Connect or disconnect \\"${id}\\""]`);
      let card = sw;
      while (card?.parentElement && !card.innerText?.includes('Streamable HTTP')) card = card.parentElement;
      return card?.innerText.split('\n').includes('Failed') ? 'failed' : false;
    }, { timeout: 30000 }, app.origin, serverId).then((h) => h.jsonValue(), () => false).catch(() => true); // a navigation under the check: away
    if (away !== true) {
      const status = await cardStatus(page);
      await user.shot(page, 'inspector-no-login');
      throw new Error(`the Inspector did not send the browser to a login page; the server card says ${JSON.stringify(status)}; ` +
        `the Network panel: ${JSON.stringify(await networkPanel(page))}`);
    }
    for (let n = 0; ; n++) {
      await page.waitForFunction(() => document.readyState !== 'loading' && document.body, { timeout: 20000 });
      const here = new URL(page.url());
      if (here.origin === app.origin) break;
      if (n >= 6) throw new Error(`did not come back to the Inspector within 6 pages (at ${here.origin}${here.pathname})`);
      const kind = await page.evaluate(() => {
        if (document.querySelector('#kc-form-login')) return 'login';
        if (document.querySelector('[name="accept"]')) return 'consent';
        return 'other';
      });
      const file = await user.shot(page, `inspector-web-${kind}`);
      seen.pages.push(kind);
      if (kind === 'login') {
        seen.login_title = await page.title();
        const q = here.searchParams;
        report.authorization = {
          redirect_uri: q.get('redirect_uri'), scope: q.get('scope'), resource: q.get('resource'),
          client_id_is_uuid: /^[0-9a-f-]{36}$/.test(q.get('client_id') ?? ''), code_challenge_method: q.get('code_challenge_method'),
        };
        await page.type('#username', opt.user);
        await page.type('#password', opt.password);
        await Promise.all([page.waitForNavigation({ waitUntil: 'domcontentloaded' }), page.click('#kc-login')]);
      } else if (kind === 'consent') {
        seen.consent_title = await page.evaluate(() => document.querySelector('h1')?.textContent.trim() ?? '');
        seen.consent = await page.evaluate(() => {
          const form = document.querySelector('[name="accept"]').closest('form')?.parentElement ?? document.body;
          return [...form.querySelectorAll('li')].map((li) => li.textContent.trim().replace(/\s+/g, ' ')).filter(Boolean);
        });
        await Promise.all([page.waitForNavigation({ waitUntil: 'domcontentloaded' }), page.click('[name="accept"]')]);
      } else {
        throw new Error(`unexpected page at ${here.origin}${here.pathname} (screenshot ${file}): ${(await bodyText(page)).slice(0, 300)}`);
      }
    }
    seen.pages.push('callback');
    step('back in the Inspector');
    // The callback page hands the code to the Inspector's backend and returns to the UI.
    const connected = await page.waitForFunction((id) => {
      const sw = document.querySelector(`input[role="switch"][aria-label="Connect or disconnect \\"${id}\\""]`);
      if (!sw || location.pathname === '/oauth/callback') return false;
      let card = sw;
      while (card.parentElement && !card.innerText?.includes('Streamable HTTP')) card = card.parentElement;
      const lines = card.innerText.split('\n');
      return (sw.checked && lines.includes('Connected')) || (lines.includes('Failed') ? 'failed' : false);
    }, { timeout: 30000 }, serverId).then((h) => h.jsonValue(), () => false);
    const shown = await bodyText(page);
    report.connected = { status: await cardStatus(page), path: new URL(page.url()).pathname,
      header: await page.evaluate(() => document.querySelector('header')?.innerText.split('\n')[0] ?? null).catch(() => null),
      authorization_complete: shown.includes('Authorization complete') };
    await page.evaluate((id) => document.querySelector(`input[role="switch"][aria-label="Connect or disconnect \\"${id}\\""]`)?.scrollIntoView({ block: 'center' }), serverId).catch(() => {});
    await settle();
    await user.shot(page, 'inspector-connected');
    if (connected !== true) {
      throw new Error(`the server card does not say Connected: ${JSON.stringify(report.connected.status)}; ` +
        `the Network panel: ${JSON.stringify(await networkPanel(page))}; the page: ${shown.slice(0, 600)}`);
    }
    step('connected');

    // 4. Tools, whoami, Execute Tool. The header's Servers | Tools switch appears with the
    // connection; a click in its first moments can go unheeded, so click again (as a person
    // would) until the list shows.
    let listed = false;
    for (let i = 0; i < 5 && !listed; i++) {
      await page.click('::-p-xpath(//label[normalize-space()="Tools"])');
      listed = await page.waitForFunction(() => /Tools \(\d+\)/.test(document.body.innerText), { timeout: 3000 }).then(() => true, () => false);
      report.tools_clicks = i + 1;
    }
    if (!listed) throw new Error(`no tool list after "Tools": ${(await bodyText(page)).slice(0, 600)}`);
    report.tools = await page.evaluate(() => {
      const heading = [...document.querySelectorAll('*')].find((e) => e.children.length === 0 && /^Tools \(\d+\)$/.test(e.textContent.trim()));
      let box = heading;
      while (box && box.querySelectorAll('button').length < 2) box = box.parentElement;
      return box ? [...box.querySelectorAll('button')].map((b) => b.textContent.trim()).filter((t) => /^[a-z_]+$/.test(t)) : [];
    });
    report.tools_heading = (await bodyText(page)).match(/Tools \(\d+\)/)?.[0] ?? null;
    await settle();
    await user.shot(page, 'inspector-tools');
    step('listed tools');
    await clickButton(page, 'whoami');
    await clickButton(page, 'Execute Tool');
    step('called whoami');
    const result = await page.waitForFunction(() => {
      const leaf = [...document.querySelectorAll('pre, code, p, span, div')].find((e) => e.children.length === 0 && /^user=\S+ session=\S+ read_only=(true|false)$/.test(e.textContent.trim()));
      return leaf?.textContent.trim();
    }, { timeout: 20000 }).then((h) => h.jsonValue(), () => null);
    await user.shot(page, 'inspector-whoami');
    if (!result) throw new Error(`no whoami result shown: ${(await bodyText(page)).slice(0, 800)}`);
    report.whoami = result;
    if (!result.startsWith(`user=${opt.user} `)) fail(`the Inspector showed whoami ${JSON.stringify(result)}, want user=${opt.user}`);
    failed = false;
  } finally {
    if (failed) {
      await user.shot(page, 'inspector-failed');
      report.inspector_output = inspectorOut.replace(/MCP_INSPECTOR_API_TOKEN=\S+/g, 'MCP_INSPECTOR_API_TOKEN=[token]').replace(/Auth token: \S+/g, 'Auth token: [token]').slice(-3000);
    }
  }
}

run(main, async () => {
  for (const c of closers.reverse()) await c();
  await browser?.close().catch(() => {});
});
