// browser.mjs: a person at a real browser, for the login tests (browser-login.mjs).
//
// Headless Chromium from the system (Debian's `chromium` package, /usr/bin/chromium, or
// $GEMGATE_TEST_CHROMIUM) driven by puppeteer-core, which downloads no browser. The "person" opens
// the authorization URL a client hands over, signs in on Keycloak's own login page, accepts
// the consent page when there is one, and stops once the browser arrives at the client's
// redirect URI (a loopback callback the client itself serves). Every page is saved as a
// screenshot into the shots folder, so a failed run shows what the user saw.

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

// inspector is the MCP Inspector installed beside these scripts (npm ci of test/node): the
// script its `mcp-inspector` command runs, and its version.
export function inspector() {
  const dir = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', '@modelcontextprotocol', 'inspector');
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return { bin: join(dir, pkg.bin['mcp-inspector']), version: pkg.version };
}

// freePort is a loopback port nothing listens on right now, for a callback or a server a
// client must be told the port of before it starts.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export function chromiumPath() {
  const p = process.env.GEMGATE_TEST_CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(p)) throw new Error(`no Chromium at ${p}: install Debian's chromium package (or set GEMGATE_TEST_CHROMIUM)`);
  return p;
}

export async function launchBrowser() {
  const args = ['--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'];
  // Chromium's own sandbox refuses to start as root; the tests run as root in CI containers.
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  return puppeteer.launch({ executablePath: chromiumPath(), headless: true, args, timeout: 60000 });
}

// User is one person with one browser profile (cookies, so a second visit is single sign-on).
export class User {
  constructor(browser, { name, password, shots, log }) {
    this.browser = browser;
    this.name = name;
    this.password = password;
    this.shots = shots;
    this.log = log; // array of page records, into the script's report
    this.n = 0;
    if (shots) mkdirSync(shots, { recursive: true });
  }

  async shot(page, what) {
    if (!this.shots) return null;
    this.n++;
    const file = join(this.shots, `${this.name}-${String(this.n).padStart(2, '0')}-${what}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => {});
    return file;
  }

  // authorize opens url and plays the user until the browser reaches a URL starting with
  // redirectPrefix. It returns that URL (the code is in its query) and what the pages showed.
  async authorize(url, redirectPrefix, { tag = 'login' } = {}) {
    const page = await this.browser.newPage();
    page.setDefaultTimeout(30000);
    const seen = { tag, pages: [], consent: null };
    this.log.push(seen);
    try {
      await page.goto(url, { waitUntil: 'domcontentloaded' });
      for (let step = 0; step < 6; step++) {
        const here = page.url();
        if (here.startsWith(redirectPrefix)) {
          seen.pages.push('callback');
          await this.shot(page, `${tag}-callback`);
          return { url: here, seen };
        }
        const kind = await page.evaluate(() => {
          if (document.querySelector('#kc-form-login')) return 'login';
          if (document.querySelector('[name="accept"]')) return 'consent';
          return 'other';
        });
        const file = await this.shot(page, `${tag}-${kind}`);
        seen.pages.push(kind);
        if (kind === 'login') {
          seen.login_title = await page.title();
          await page.type('#username', this.name);
          await page.type('#password', this.password);
          await Promise.all([page.waitForNavigation({ waitUntil: 'domcontentloaded' }), page.click('#kc-login')]);
        } else if (kind === 'consent') {
          seen.consent = await page.evaluate(() => {
            const form = document.querySelector('[name="accept"]').closest('form')?.parentElement ?? document.body;
            return [...form.querySelectorAll('li')].map((li) => li.textContent.trim().replace(/\s+/g, ' ')).filter(Boolean);
          });
          seen.consent_title = await page.evaluate(() => document.querySelector('h1')?.textContent.trim() ?? '');
          await Promise.all([page.waitForNavigation({ waitUntil: 'domcontentloaded' }), page.click('[name="accept"]')]);
        } else {
          const text = await page.evaluate(() => document.body?.innerText ?? '');
          throw new Error(`unexpected page at ${here.split('?')[0]} (screenshot ${file}): ${text.slice(0, 300)}`);
        }
      }
      throw new Error(`did not reach ${redirectPrefix} within 6 pages`);
    } finally {
      await page.close().catch(() => {});
    }
  }
}
