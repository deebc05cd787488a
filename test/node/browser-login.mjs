// browser-login.mjs: MCP clients log in to gemgate through Keycloak's pages in a real browser.
//
// Run by test/browser_test.go against Keycloak with deploy/keycloak/realm-gemgate.json and
// `gemgate serve` configured as the compose demo. The "user" is headless Chromium driven by
// puppeteer-core (browser.mjs). One scenario per run (--scenario):
//
//   sdk       The TypeScript SDK (StreamableHTTPClientTransport) with an OAuthClientProvider that
//             has no client id: 401, metadata, dynamic registration, the login page, the consent
//             page, the loopback callback, tools. --user alice: read-write, write_note works;
//             then the step-up: the same registered client authorizes for "mcp:use profile"
//             only (a read-only session), write_note gets 403 insufficient_scope, the SDK sends
//             the browser back to Keycloak for the challenge's scope (the provider keeps no
//             refresh token: a refresh cannot widen a scope), and the SAME session turns
//             read-write; last, a client registered with only "mcp:use profile" asks for
//             mcp:write and is refused (invalid_scope). --user bob: his client's callback is on
//             the IPv6 loopback (http://[::1]:port/callback); read-only, write_note is refused
//             with 403.
//   inspector The MCP Inspector 2.x CLI with no client id: it registers itself, opens "the
//             browser" ($BROWSER, which hands the URL to Chromium here), gets the callback on
//             its own loopback server and calls whoami.
//   cimd      A client identified by a Client ID Metadata Document (Keycloak's experimental
//             `cimd` feature): the document is served here over TLS (--tls-dir: leaf.pem and
//             leaf.key for 127.0.0.1, whose CA Keycloak trusts) and its URL is the client_id;
//             no registration. Login, consent, token, and whoami through gemgate.
//             --claude-like: the document names portless loopback callbacks, as Claude Code's
//             does, and the request uses http://localhost:<port>/callback.
//   vscode    VS Code's exact registration request (client_uri code.visualstudio.com, the
//             vscode.dev redirect URIs): 201; its vscode.dev redirect reaches the login page, not
//             "Invalid parameter: redirect_uri"; its loopback way logs in and gets a token
//             gemgate accepts.
//
// Prints one JSON line (no token, code or secret) and exits 1 when an expectation fails, 2 on
// a crash or timeout. Passwords come from GEMGATE_USER_PASSWORD. Needs Node >= 22.12 (the
// node_modules/node/bin/node of this folder).
//
// Usage: node browser-login.mjs --scenario sdk|inspector|vscode|cimd --url URL --user NAME --shots DIR
//        [--tls-dir DIR] [--claude-like]

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { newReport, textOf } from './report.mjs';
import { User, freePort, inspector, launchBrowser } from './browser.mjs';

const { values: flags } = parseArgs({
  options: {
    scenario: { type: 'string' },
    url: { type: 'string' },
    user: { type: 'string' },
    shots: { type: 'string' },
    timeout: { type: 'string' },
    'tls-dir': { type: 'string' },
    'claude-like': { type: 'boolean' },
  },
  strict: true,
});
const opt = {
  scenario: flags.scenario,
  url: flags.url,
  user: flags.user,
  password: process.env.GEMGATE_USER_PASSWORD,
  shots: flags.shots,
  timeoutMs: Number(flags.timeout ?? 150000),
};
for (const k of ['scenario', 'url', 'user', 'password']) {
  if (!opt[k]) {
    console.error(`browser-login: missing ${k} (see the usage at the top of browser-login.mjs)`);
    process.exit(2);
  }
}

const { report, fail, recordingFetch, run } = newReport({ scenario: opt.scenario, user: opt.user, pages: [] }, opt.timeoutMs);
let browser;
const closers = [];

// callbackServer is a client's loopback redirect URI: it answers the browser and hands over the
// query of each request it gets.
async function callbackServer(path, host = '127.0.0.1') {
  const waiting = [];
  const server = createServer((req, res) => {
    const u = new URL(req.url, 'http://127.0.0.1');
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<h1>Done. You can close this window.</h1>');
    if (u.pathname === path) waiting.splice(0).forEach((w) => w(u.searchParams));
  });
  await new Promise((r) => server.listen(0, host, r));
  closers.push(() => new Promise((r) => server.close(r)));
  const name = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${name}:${server.address().port}${path}`, next: () => new Promise((r) => waiting.push(r)) };
}

// codeFrom takes the authorization code out of a callback URL, or fails with Keycloak's error.
function codeFrom(url) {
  const q = new URL(url).searchParams;
  if (!q.get('code')) throw new Error(`the callback carries no code: error=${q.get('error')} ${q.get('error_description') ?? ''}`);
  return q.get('code');
}

// BrowserProvider is an OAuthClientProvider with no client id (dynamic registration) whose
// redirectToAuthorization hands the URL to the user at the browser. It keeps no refresh token
// when keepRefresh is false.
class BrowserProvider {
  constructor(user, redirectUrl, { keepRefresh = false } = {}) {
    this.user = user;
    this._redirectUrl = redirectUrl;
    this.keepRefresh = keepRefresh;
    this._client = undefined;
    this._tokens = undefined;
    this.code = undefined;
    this.authorizations = [];
  }
  get redirectUrl() {
    return this._redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: 'gemgate browser test',
      redirect_uris: [this._redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this._client;
  }
  saveClientInformation(info) {
    this._client = info;
    report.registered = { scope: info.scope, redirect_uris: info.redirect_uris };
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = this.keepRefresh ? tokens : { ...tokens, refresh_token: undefined };
    report.token_scopes = [...(report.token_scopes ?? []), tokens.scope];
  }
  saveCodeVerifier(v) {
    this._verifier = v;
  }
  codeVerifier() {
    return this._verifier;
  }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
  }
  async redirectToAuthorization(url) {
    this.authorizations.push({ scope: url.searchParams.get('scope'), resource: url.searchParams.get('resource') });
    const { url: back } = await this.user.authorize(url.href, this._redirectUrl, { tag: `authorize${this.authorizations.length}` });
    this.code = codeFrom(back);
  }
}

// connect opens an MCP session with provider, through the browser when it has no token.
async function connect(provider) {
  let transport = new StreamableHTTPClientTransport(new URL(opt.url), { authProvider: provider, fetch: recordingFetch });
  let client = new Client({ name: 'gemgate-browser-test', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
    await transport.finishAuth(provider.code);
    transport = new StreamableHTTPClientTransport(new URL(opt.url), { authProvider: provider, fetch: recordingFetch });
    client = new Client({ name: 'gemgate-browser-test', version: '1.0.0' });
    await client.connect(transport);
  }
  closers.push(() => client.close().catch(() => {}));
  return { client, transport };
}

const whoami = async (client) => textOf(await client.callTool({ name: 'whoami', arguments: {} }));

// writeNote calls write_note and returns its text, or the refusal's status and message.
async function writeNote(client, text) {
  const mark = report.http.length;
  try {
    const r = await client.callTool({ name: 'write_note', arguments: { name: 'browser', text } });
    return { ok: !r.isError, text: textOf(r) };
  } catch (err) {
    const refused = report.http.slice(mark).find((e) => e.status === 403);
    return { ok: false, error: err.message, status: refused?.status, challenge: refused?.www_authenticate, message: refused?.body?.error?.message };
  }
}

async function scenarioSDK(user) {
  // bob's client listens on the IPv6 loopback address, as some native clients do.
  const cb = await callbackServer('/callback', opt.user === 'bob' ? '::1' : '127.0.0.1');
  report.redirect_uri = cb.url.replace(/:\d+\//, ':PORT/');
  const provider = new BrowserProvider(user, cb.url);
  const { client } = await connect(provider);
  report.authorizations = provider.authorizations;
  report.whoami = await whoami(client);
  report.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  report.write = await writeNote(client, 'from the browser test');
  if (opt.user === 'bob') {
    if (!report.whoami.includes('user=bob ') || !report.whoami.includes('read_only=true')) fail(`bob's whoami: ${report.whoami}`);
    if (report.tools.includes('write_note')) fail('bob is offered write_note');
    if (report.write.ok || report.write.status !== 403) fail(`bob's write_note was not refused with 403: ${JSON.stringify(report.write)}`);
    return;
  }
  if (!report.whoami.includes('user=alice ') || !report.whoami.includes('read_only=false')) fail(`alice's whoami: ${report.whoami}`);
  if (!report.write.ok) fail(`alice's write_note failed: ${JSON.stringify(report.write)}`);
  await client.close();

  // Step-up: the same registered client, a read-only session first.
  provider._tokens = undefined;
  const before = provider.authorizations.length;
  const narrow = await auth(provider, { serverUrl: new URL(opt.url), scope: 'mcp:use profile', fetchFn: recordingFetch });
  if (narrow !== 'REDIRECT') fail(`auth() for mcp:use answered ${narrow}, want REDIRECT`);
  if (provider.authorizations.length !== before + 1) fail('auth() for mcp:use did not go to the browser');
  await auth(provider, { serverUrl: new URL(opt.url), authorizationCode: provider.code, fetchFn: recordingFetch });
  const { client: ro, transport } = await connect(provider);
  const session = transport.sessionId;
  report.stepup = { whoami_before: await whoami(ro) };
  if (!report.stepup.whoami_before.includes('read_only=true')) fail(`the mcp:use session is not read-only: ${report.stepup.whoami_before}`);
  const mark = report.http.length;
  let code = null;
  try {
    await ro.callTool({ name: 'write_note', arguments: { name: 'browser', text: 'step-up' } });
    fail('write_note on the read-only session was not refused');
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
    code = provider.code; // the SDK sent the browser to Keycloak for the challenge's scope
  }
  const refused = report.http.slice(mark).find((e) => e.status === 403);
  report.stepup.challenge = refused?.www_authenticate;
  report.stepup.message = refused?.body?.error?.message;
  report.stepup.authorization = provider.authorizations.at(-1);
  await transport.finishAuth(code);
  const w = await ro.callTool({ name: 'write_note', arguments: { name: 'browser', text: 'after step-up' } });
  report.stepup.write = { ok: !w.isError, text: textOf(w) };
  report.stepup.same_session = transport.sessionId === session && Boolean(session);
  report.stepup.whoami_after = await whoami(ro);
  if (!report.stepup.write.ok) fail(`write_note after the step-up failed: ${report.stepup.write.text}`);
  if (!report.stepup.same_session) fail('the session id changed across the step-up');
  if (!report.stepup.whoami_after.includes('read_only=false')) fail(`whoami after the step-up: ${report.stepup.whoami_after}`);

  report.narrow = await narrowRegistration(user);
}

// narrowRegistration registers a client with only "mcp:use profile" and then asks, through the
// browser, for "mcp:use mcp:write profile". Keycloak 26.7 keeps a registration's scope as the
// client's only optional scopes (its defaults become "basic"), so it answers the callback with
// error=invalid_scope, whoever the user is; docs/clients.md says so, and the Go test pins it so
// that a Keycloak which starts to allow it (26.8 changes how a registration's scope is applied)
// is noticed.
async function narrowRegistration(user) {
  const { createHash, randomBytes } = await import('node:crypto');
  const prm = await (await recordingFetch(new URL('/.well-known/oauth-protected-resource/mcp', opt.url))).json();
  const asMeta = await (await recordingFetch(`${prm.authorization_servers[0]}/.well-known/openid-configuration`)).json();
  const cb = await callbackServer('/callback');
  const reg = await recordingFetch(asMeta.registration_endpoint, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ client_name: 'gemgate browser test (mcp:use only)', redirect_uris: [cb.url], grant_types: ['authorization_code'],
      response_types: ['code'], token_endpoint_auth_method: 'none', scope: 'mcp:use profile' }) });
  const client = await reg.json();
  if (reg.status !== 201) throw new Error(`the narrow registration answered ${reg.status}: ${client.error_description ?? client.error}`);
  const u = new URL(asMeta.authorization_endpoint);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: client.client_id, redirect_uri: cb.url, scope: 'mcp:use mcp:write profile',
    code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'), code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex') })) u.searchParams.set(k, v);
  const { url: back } = await user.authorize(u.href, cb.url, { tag: 'narrow' });
  const q = new URL(back).searchParams;
  return { registered_scope: client.scope, error: q.get('error'), got_code: Boolean(q.get('code')) };
}

async function scenarioInspector(user) {
  const cli = inspector();
  report.inspector_version = cli.version;
  const home = mkdtempSync(join(tmpdir(), 'gemgate-inspector-'));
  closers.push(() => rmSync(home, { recursive: true, force: true }));
  // "The browser": xdg-open (through the `open` package) runs $BROWSER with the URL.
  const urls = join(home, 'opened-urls');
  const opener = join(home, 'browser.sh');
  writeFileSync(opener, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${urls}'\n`, { mode: 0o755 });
  const callback = `http://127.0.0.1:${await freePort()}/oauth/callback`;
  const env = { PATH: process.env.PATH, HOME: home, BROWSER: opener, NO_COLOR: '1', MCP_AUTO_OPEN_ENABLED: 'true',
    MCP_CATALOG_PATH: join(home, 'catalog.json'), MCP_CLIENT_CONFIG_PATH: join(home, 'client.json'), MCP_INSPECTOR_SECRET_STORE: 'memory' };
  const child = spawn(process.execPath, [cli.bin, '--cli', '--format', 'json', '--server-url', opt.url,
    '--callback-url', callback, '--method', 'tools/call', '--tool-name', 'whoami'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.on('close', (code) => r(code)));
  closers.push(() => child.kill());
  let done = false;
  exited.then(() => (done = true));
  // Wait for the CLI to open the authorization URL (or to exit without doing so).
  while (!done && !existsSync(urls)) await new Promise((r) => setTimeout(r, 100));
  if (existsSync(urls)) {
    const url = readFileSync(urls, 'utf8').trim().split('\n')[0];
    const u = new URL(url);
    report.authorization = { client_id_is_uuid: /^[0-9a-f-]{36}$/.test(u.searchParams.get('client_id') ?? ''), scope: u.searchParams.get('scope') };
    await user.authorize(url, callback, { tag: 'inspector' });
  }
  const code = await exited;
  report.inspector_exit = code;
  const line = out.trim().split('\n').filter((l) => l.startsWith('{')).at(-1);
  let result;
  try {
    result = line ? JSON.parse(line) : undefined;
  } catch {
    result = undefined;
  }
  report.whoami = (result?.result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  if (code !== 0) fail(`the Inspector CLI exited ${code}: ${err.slice(-1500)}`);
  if (!report.whoami.includes(`user=${opt.user} `)) fail(`the Inspector's whoami: ${JSON.stringify(report.whoami)}`);
}

// VS Code's registration request, as src/vs/base/common/oauth.ts fetchDynamicRegistration sends it.
const vscodeRegistration = {
  client_name: 'Visual Studio Code',
  client_uri: 'https://code.visualstudio.com',
  grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
  response_types: ['code'],
  redirect_uris: ['https://insiders.vscode.dev/redirect', 'https://vscode.dev/redirect', 'http://127.0.0.1/', 'http://127.0.0.1:33418/'],
  token_endpoint_auth_method: 'none',
  application_type: 'native',
};

async function scenarioVSCode(user) {
  const prm = await (await recordingFetch(new URL('/.well-known/oauth-protected-resource/mcp', opt.url))).json();
  const issuer = prm.authorization_servers[0];
  const asMeta = await (await recordingFetch(`${issuer}/.well-known/openid-configuration`)).json();
  const reg = await recordingFetch(asMeta.registration_endpoint, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(vscodeRegistration) });
  const regBody = await reg.json();
  report.registration = { status: reg.status, error: regBody.error_description ?? regBody.error, scope: regBody.scope };
  if (reg.status !== 201) {
    fail(`VS Code's registration answered ${reg.status}: ${report.registration.error}`);
    return;
  }
  const { createHash, randomBytes } = await import('node:crypto');
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authURL = (redirect) => {
    const u = new URL(asMeta.authorization_endpoint);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id: regBody.client_id, redirect_uri: redirect, scope: prm.scopes_supported.join(' '),
      code_challenge: challenge, code_challenge_method: 'S256', state: randomBytes(8).toString('hex'), resource: prm.resource })) u.searchParams.set(k, v);
    return u.href;
  };
  // 1. The URL handler way (vscode.dev brokers the redirect back to VS Code): Keycloak must show
  // its login page for it; the test stops there (vscode.dev is not reachable from here).
  const page = await browser.newPage();
  await page.goto(authURL('https://vscode.dev/redirect'), { waitUntil: 'domcontentloaded' });
  report.urlhandler_page = (await page.$('#kc-form-login')) ? 'login' : (await page.evaluate(() => document.body.innerText)).slice(0, 200);
  await user.shot(page, 'vscode-urlhandler');
  await page.close();
  if (report.urlhandler_page !== 'login') fail(`the vscode.dev redirect did not reach the login page: ${report.urlhandler_page}`);
  // 2. The loopback way, on VS Code's own port 33418 (its registered http://127.0.0.1:33418/),
  // or a free port when that one is taken, as VS Code does.
  const cb = await loopbackServer(33418);
  const { url: back } = await user.authorize(authURL(cb), cb, { tag: 'vscode-loopback' });
  const form = new URLSearchParams({ grant_type: 'authorization_code', code: codeFrom(back), redirect_uri: cb, client_id: regBody.client_id, code_verifier: verifier, resource: prm.resource });
  const tok = await recordingFetch(asMeta.token_endpoint, { method: 'POST', body: form });
  const tokens = await tok.json();
  if (tok.status !== 200) throw new Error(`token endpoint answered ${tok.status}: ${tokens.error_description ?? tokens.error}`);
  report.token_scope = tokens.scope;
  const transport = new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } }, fetch: recordingFetch });
  const client = new Client({ name: 'Visual Studio Code', version: '1.0.0' });
  await client.connect(transport);
  closers.push(() => client.close().catch(() => {}));
  report.whoami = await whoami(client);
  if (!report.whoami.includes(`user=${opt.user} `)) fail(`VS Code's whoami: ${report.whoami}`);
}

async function scenarioCIMD(user) {
  const { createServer: createHTTPS } = await import('node:https');
  const { createHash, randomBytes } = await import('node:crypto');
  const claudeLike = Boolean(flags['claude-like']);
  const cb = await callbackServer('/callback');
  const redirect = claudeLike ? cb.url.replace('127.0.0.1', 'localhost') : cb.url;
  let clientId;
  report.document_fetches = 0;
  const tls = flags['tls-dir'];
  const docServer = createHTTPS({ cert: readFileSync(join(tls, 'leaf.pem')), key: readFileSync(join(tls, 'leaf.key')) }, (req, res) => {
    report.document_fetches++;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=60' }).end(JSON.stringify({
      client_id: clientId, client_name: 'gemgate CIMD test', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      token_endpoint_auth_method: 'none', redirect_uris: claudeLike ? ['http://localhost/callback', 'http://127.0.0.1/callback'] : [redirect] }));
  });
  await new Promise((r) => docServer.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => docServer.close(r)));
  clientId = `https://127.0.0.1:${docServer.address().port}/client-metadata.json`;
  const prm = await (await recordingFetch(new URL('/.well-known/oauth-protected-resource/mcp', opt.url))).json();
  const asMeta = await (await recordingFetch(`${prm.authorization_servers[0]}/.well-known/oauth-authorization-server`)).json();
  report.as_metadata = { cimd: asMeta.client_id_metadata_document_supported ?? null, none: asMeta.token_endpoint_auth_methods_supported?.includes('none') };
  if (!report.as_metadata.cimd || !report.as_metadata.none) fail(`Keycloak's metadata does not advertise CIMD with "none": ${JSON.stringify(report.as_metadata)}`);
  const verifier = randomBytes(32).toString('base64url');
  const u = new URL(asMeta.authorization_endpoint);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: redirect, scope: prm.scopes_supported.join(' '),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', state: randomBytes(8).toString('hex') })) u.searchParams.set(k, v);
  const { url: back } = await user.authorize(u.href, redirect, { tag: 'cimd' });
  const form = new URLSearchParams({ grant_type: 'authorization_code', code: codeFrom(back), redirect_uri: redirect, client_id: clientId, code_verifier: verifier });
  const tok = await recordingFetch(asMeta.token_endpoint, { method: 'POST', body: form });
  const tokens = await tok.json();
  if (tok.status !== 200) throw new Error(`token endpoint answered ${tok.status}: ${tokens.error_description ?? tokens.error}`);
  report.token_scope = tokens.scope;
  const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url'));
  report.azp_is_document = claims.azp === clientId;
  const transport = new StreamableHTTPClientTransport(new URL(opt.url), { requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } }, fetch: recordingFetch });
  const client = new Client({ name: 'gemgate CIMD test', version: '1.0.0' });
  await client.connect(transport);
  closers.push(() => client.close().catch(() => {}));
  report.whoami = await whoami(client);
  if (!report.whoami.includes(`user=${opt.user} `)) fail(`whoami: ${report.whoami}`);
  if (report.document_fetches < 1) fail('Keycloak never fetched the metadata document');
}

// loopbackServer listens as VS Code's loopback flow does: on its own port 33418 (registered
// as http://127.0.0.1:33418/) and, when another process holds that port (it lies in the
// kernel's ephemeral range), on a free one, which the registered portless http://127.0.0.1/
// admits.
async function loopbackServer(port) {
  const server = createServer((req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<h1>Done.</h1>'));
  const listen = (p) => new Promise((resolve, reject) => server.once('error', reject).listen(p, '127.0.0.1', resolve));
  try {
    await listen(port);
  } catch (err) {
    if (err.code !== 'EADDRINUSE') throw err;
    server.removeAllListeners('listening');
    await listen(0);
  }
  report.loopback_port = server.address().port;
  closers.push(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${server.address().port}/`;
}

async function main() {
  browser = await launchBrowser();
  report.browser = await browser.version();
  const user = new User(browser, { name: opt.user, password: opt.password, shots: opt.shots, log: report.pages });
  const scenarios = { sdk: scenarioSDK, inspector: scenarioInspector, vscode: scenarioVSCode, cimd: scenarioCIMD };
  if (!scenarios[opt.scenario]) throw new Error(`unknown scenario ${opt.scenario}`);
  await scenarios[opt.scenario](user);
}

run(main, async () => {
  for (const c of closers.reverse()) await c();
  await browser?.close().catch(() => {});
});
