// inspector-cli.mjs: the MCP Inspector CLI against gemgate with a bearer token.
//
// It runs `mcp-inspector --cli` (the bin of @modelcontextprotocol/inspector) three times, the
// way a user would from a shell:
//   1. tools/list with --header "Authorization: Bearer <token>": the demo tools are listed;
//   2. tools/call echo with the same header: the text comes back byte for byte;
//   3. tools/list with no token and --stored-auth-only: gemgate's 401 makes it fail with
//      auth_required instead of listing anything.
// It prints one JSON line with what it saw and exits 1 when an expectation fails, 2 on a usage
// error or when the CLI could not be run.
//
// The Inspector needs Node >= 22.19: run this script with the node of the `node` devDependency
// (node_modules/node/bin/node); it starts the CLI with the same node.
//
// Usage: GEMGATE_TOKEN=... node inspector-cli.mjs --url URL [--expect-tools whoami,echo,write_note]
// GEMGATE_URL may replace --url. The token comes only from GEMGATE_TOKEN and is never printed.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({
  options: {
    url: { type: 'string' },
    'expect-tools': { type: 'string' },
    timeout: { type: 'string' },
  },
  strict: true,
});
const url = flags.url ?? process.env.GEMGATE_URL;
const token = process.env.GEMGATE_TOKEN;
const expectTools = (flags['expect-tools'] ?? 'whoami,echo,write_note').split(',').filter(Boolean);
const timeoutMs = Number(flags.timeout ?? process.env.GEMGATE_TIMEOUT_MS ?? 60000);

function usage(msg) {
  console.error(`inspector-cli: ${msg}`);
  process.exit(2);
}
if (!url) usage('missing --url (or GEMGATE_URL)');
if (!token) usage('missing GEMGATE_TOKEN');
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  usage(`the MCP Inspector needs Node >= 22.19, this is ${process.version}; run with node_modules/node/bin/node`);
}

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, 'node_modules', '@modelcontextprotocol', 'inspector');
let cli;
try {
  const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  cli = join(pkgDir, pkg.bin['mcp-inspector']);
} catch (err) {
  usage(`@modelcontextprotocol/inspector is not installed (run npm ci --prefix test/node): ${err.message}`);
}

// The CLI keeps a catalog, a client config and OAuth state under the home directory; give it
// a throwaway one so the test neither reads nor writes the user's.
const home = mkdtempSync(join(tmpdir(), 'gemgate-inspector-'));
const childEnv = {
  PATH: process.env.PATH,
  HOME: home,
  MCP_CATALOG_PATH: join(home, 'catalog.json'),
  MCP_CLIENT_CONFIG_PATH: join(home, 'client.json'),
  MCP_INSPECTOR_SECRET_STORE: 'memory',
  MCP_AUTO_OPEN_ENABLED: 'false',
  NO_COLOR: '1',
};

const report = { client: 'mcp-inspector-cli', version: '', node: process.version, url, runs: {}, failures: [] };
const fail = (msg) => report.failures.push(msg);

// inspector runs the CLI once and returns its exit code and parsed JSON output.
function inspector(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, '--cli', '--format', 'json', ...args], {
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e) => resolve({ code: -1, error: e.message }));
    child.on('close', (code, signal) => {
      const parse = (s) => {
        const line = s.trim().split('\n').filter((l) => l.startsWith('{')).at(-1);
        try {
          return line ? JSON.parse(line) : undefined;
        } catch {
          return undefined;
        }
      };
      resolve({ code, signal, raw: out.trim(), out: parse(out), err: parse(err), stderr: err.slice(-2000) });
    });
  });
}

const bearer = ['--header', `Authorization: Bearer ${token}`];

async function main() {
  const version = await inspector(['--version']);
  report.version = version.raw.split('\n').at(-1);

  // 1. tools/list
  const list = await inspector(['--server-url', url, ...bearer, '--method', 'tools/list']);
  const tools = (list.out?.result?.tools ?? []).map((t) => t.name).sort();
  report.runs.tools_list = { exit: list.code, tools };
  if (list.code !== 0) fail(`tools/list exited ${list.code}: ${JSON.stringify(list.err) ?? list.stderr}`);
  for (const t of expectTools) {
    if (!tools.includes(t)) fail(`tools/list lacks ${t}`);
  }

  // 2. tools/call echo; --tool-args-json passes the text verbatim (no key=value coercion).
  const payload = `héllo from the Inspector CLI\n${Date.now()} "quoted" \\ {json}`;
  const echo = await inspector(['--server-url', url, ...bearer, '--method', 'tools/call', '--tool-name', 'echo',
    '--tool-args-json', JSON.stringify({ text: payload })]);
  const content = echo.out?.result?.content ?? [];
  const text = content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  report.runs.echo = { exit: echo.code, text, is_error: Boolean(echo.out?.result?.isError) };
  if (echo.code !== 0) fail(`tools/call echo exited ${echo.code}: ${JSON.stringify(echo.err) ?? echo.stderr}`);
  if (text !== payload) fail(`echo returned ${JSON.stringify(text)}, want ${JSON.stringify(payload)}`);

  // 3. No token: gemgate answers 401 and the CLI, told not to start an interactive login, fails.
  const anon = await inspector(['--server-url', url, '--stored-auth-only', '--method', 'tools/list']);
  report.runs.no_token = { exit: anon.code, error: anon.err?.error ?? anon.out?.error };
  if (anon.code === 0) fail('tools/list without a token succeeded');
  if (report.runs.no_token.error?.code !== 'auth_required') fail(`tools/list without a token: ${JSON.stringify(anon.err) ?? anon.stderr}`);
}

let code = 0;
try {
  await main();
} catch (err) {
  fail(`${err.name}: ${err.message}`);
  code = 2;
} finally {
  rmSync(home, { recursive: true, force: true });
}
report.ok = report.failures.length === 0;
// The token went to the CLI on its command line; make sure no echo of it leaves this script.
const line = JSON.stringify(report).replaceAll(token, '[token]');
process.stdout.write(line + '\n', () => process.exit(report.ok ? 0 : code || 1));
