// ts-client.mjs: the TypeScript MCP SDK client against gemgate, starting with no token.
//
// It connects with StreamableHTTPClientTransport and a ClientCredentialsProvider, so the SDK
// itself must follow gemgate's 401 to the protected-resource metadata, then to the issuer's
// metadata and token endpoint, and retry with the token it got. Then it lists tools, calls
// whoami, and either writes and reads a note (read-write) or checks that the mutating tools are
// hidden and refused (read-only). It prints one JSON line with what it saw and exits 1 when an
// expectation fails, 2 on a usage error or a crash.
//
// Usage:
//   node ts-client.mjs --url URL --issuer ISSUER --client-id ID --mode read-write|read-only
//                      [--scope "mcp:use mcp:write"] [--user NAME]
// Each flag may come from the environment instead: GEMGATE_URL, GEMGATE_ISSUER,
// GEMGATE_CLIENT_ID, GEMGATE_CLIENT_SECRET, GEMGATE_EXPECT_MODE, GEMGATE_SCOPE, GEMGATE_USER.
// The client secret is read from GEMGATE_CLIENT_SECRET (or --client-secret, which shows in the
// process table; prefer the environment). No token or secret is ever printed.

import { newReport, textOf } from './report.mjs';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const { values: flags } = parseArgs({
  options: {
    url: { type: 'string' },
    issuer: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    mode: { type: 'string' },
    scope: { type: 'string' },
    user: { type: 'string' },
    timeout: { type: 'string' },
  },
  strict: true,
});

const env = process.env;
const opt = {
  url: flags.url ?? env.GEMGATE_URL,
  issuer: flags.issuer ?? env.GEMGATE_ISSUER,
  clientId: flags['client-id'] ?? env.GEMGATE_CLIENT_ID,
  clientSecret: flags['client-secret'] ?? env.GEMGATE_CLIENT_SECRET,
  mode: flags.mode ?? env.GEMGATE_EXPECT_MODE,
  timeoutMs: Number(flags.timeout ?? env.GEMGATE_TIMEOUT_MS ?? 60000),
};
opt.scope = flags.scope ?? env.GEMGATE_SCOPE ?? (opt.mode === 'read-only' ? 'mcp:use' : 'mcp:use mcp:write');
opt.user = flags.user ?? env.GEMGATE_USER ?? opt.clientId;

function usage(msg) {
  console.error(`ts-client: ${msg}`);
  process.exit(2);
}
for (const k of ['url', 'issuer', 'clientId', 'clientSecret', 'mode']) {
  if (!opt[k]) usage(`missing ${k} (see the usage at the top of ts-client.mjs)`);
}
if (opt.mode !== 'read-write' && opt.mode !== 'read-only') usage(`--mode must be read-write or read-only, not ${opt.mode}`);

const { report, fail, recordingFetch, run } = newReport(
  { client: 'typescript-sdk', url: opt.url, user: opt.user, mode: opt.mode, scope: opt.scope },
  opt.timeoutMs,
);

let client;
let transport;

async function main() {
  const provider = new ClientCredentialsProvider({
    clientId: opt.clientId,
    clientSecret: opt.clientSecret,
    scope: opt.scope,
    clientName: 'gemgate-ts-client-test',
    expectedIssuer: opt.issuer,
  });
  if (provider.tokens() !== undefined) fail('the provider held a token before connecting');

  transport = new StreamableHTTPClientTransport(new URL(opt.url), { authProvider: provider, fetch: recordingFetch });
  client = new Client({ name: 'gemgate-ts-client-test', version: '1.0.0' });

  // For client_credentials the transport's 401 handler runs auth() itself: discovery, then
  // fetchToken through provider.prepareTokenRequest(), and resends the request. It throws
  // UnauthorizedError only when that does not end in AUTHORIZED (finishAuth is for the
  // authorization_code redirect, which this flow never takes), so a plain connect must succeed.
  await client.connect(transport);
  report.session = transport.sessionId ? 'set' : 'missing';
  report.protocol_version = transport.protocolVersion;
  report.server = client.getServerVersion();
  if (!transport.sessionId) fail('no MCP-Session-Id after initialize');

  checkAuthFlow();

  const { tools } = await client.listTools();
  report.tools = tools.map((t) => t.name).sort();

  const who = await client.callTool({ name: 'whoami', arguments: {} });
  report.whoami = textOf(who);
  const wantRO = opt.mode === 'read-only';
  if (!report.whoami.includes(`user=${opt.user} `)) fail(`whoami does not name user ${opt.user}: ${report.whoami}`);
  if (!report.whoami.includes(`read_only=${wantRO}`)) fail(`whoami is not read_only=${wantRO}: ${report.whoami}`);

  for (const t of ['whoami', 'echo', 'read_note', 'list_notes']) {
    if (!report.tools.includes(t)) fail(`tools/list lacks ${t}`);
  }
  if (wantRO) await readOnlyChecks();
  else await readWriteChecks();

  await transport.terminateSession();
  report.http.at(-1).rpc ??= 'DELETE session';
  const del = report.http.at(-1);
  if (del.method !== 'DELETE' || del.status >= 300) fail(`DELETE of the session answered ${del.status}`);
}

// checkAuthFlow asserts the discovery sequence: an unauthenticated POST answered 401 with a
// resource_metadata challenge, the metadata fetched, the issuer's metadata fetched, a
// client_credentials token request for the MCP URL as resource, then the POST retried with it.
function checkAuthFlow() {
  const h = report.http;
  const flow = [];
  const first = h[0];
  if (!first || first.method !== 'POST' || first.url !== opt.url || first.auth || first.status !== 401) {
    fail(`first request was not an unauthenticated POST answered 401: ${JSON.stringify(first)}`);
    return;
  }
  const m = /resource_metadata="([^"]+)"/.exec(first.www_authenticate ?? '');
  if (!m) fail(`401 challenge lacks resource_metadata: ${first.www_authenticate}`);
  flow.push('401');
  const prm = h.find((e) => e.method === 'GET' && m && e.url === m[1]);
  if (!prm || prm.status !== 200) fail(`protected-resource metadata at ${m?.[1]} not fetched with 200`);
  else flow.push('resource-metadata');
  const issuerOrigin = new URL(opt.issuer).origin;
  const asMeta = h.find((e) => e.method === 'GET' && e.url.startsWith(issuerOrigin) && e.url.includes('/.well-known/') && e.status === 200);
  if (!asMeta) fail('authorization-server metadata not fetched from the issuer');
  else flow.push('issuer-metadata');
  const tok = h.find((e) => e.form && e.url.startsWith(issuerOrigin));
  if (!tok || tok.status !== 200) fail(`no successful token request at the issuer: ${JSON.stringify(tok)}`);
  else {
    flow.push('token');
    if (tok.form.grant_type !== 'client_credentials') fail(`token request grant_type=${tok.form.grant_type}`);
    if (tok.form.resource !== opt.url) fail(`token request resource=${tok.form.resource}, want ${opt.url}`);
    if (tok.form.scope !== opt.scope) fail(`token request scope=${tok.form.scope}, want ${opt.scope}`);
    if (tok.auth !== 'basic') fail(`token request client authentication ${tok.auth}, want basic`);
  }
  const retried = h.find((e, i) => i > 0 && e.method === 'POST' && e.url === opt.url && e.auth === 'bearer' && e.rpc === 'initialize');
  if (!retried || retried.status !== 200) fail(`initialize not retried with a bearer token: ${JSON.stringify(retried)}`);
  else flow.push('initialize');
  report.auth_flow = flow;
}

async function readWriteChecks() {
  for (const t of ['write_note', 'delete_note']) {
    if (!report.tools.includes(t)) fail(`read-write session lacks ${t}`);
  }
  const body = `note from the TypeScript SDK, ${new Date().toISOString()}`;
  const w = await client.callTool({ name: 'write_note', arguments: { name: 'ts-note', text: body } });
  report.write_note = { is_error: Boolean(w.isError), text: textOf(w) };
  if (w.isError) fail(`write_note failed: ${textOf(w)}`);
  const r = await client.callTool({ name: 'read_note', arguments: { name: 'ts-note' } });
  report.read_note = textOf(r);
  if (r.isError || !report.read_note.includes(body)) fail(`read_note did not return the note written: ${report.read_note}`);
}

async function readOnlyChecks() {
  for (const t of ['write_note', 'delete_note']) {
    if (report.tools.includes(t)) fail(`read-only session lists ${t}`);
  }
  const before = report.http.length;
  try {
    const w = await client.callTool({ name: 'write_note', arguments: { name: 'ts-note', text: 'must not be written' } });
    report.write_note = { is_error: Boolean(w.isError), text: textOf(w) };
    fail(`write_note by name was not refused at the HTTP layer: ${JSON.stringify(report.write_note)}`);
  } catch (err) {
    report.write_note_error = { name: err.name, code: err.code, message: err.message };
  }
  // What the gateway answered on the wire, and what the SDK did about it.
  const calls = report.http.slice(before);
  const refused = calls.filter((e) => e.rpc === 'tools/call write_note' && e.status === 403);
  const tokenRetries = calls.filter((e) => e.form).length;
  report.write_note_refusal = {
    http_403s: refused.length,
    token_requests_for_upscoping: tokenRetries,
    www_authenticate: refused[0]?.www_authenticate,
    jsonrpc_error: refused[0]?.body?.error,
  };
  if (refused.length === 0) fail('write_note was not answered 403');
  const ch = refused[0]?.www_authenticate ?? '';
  if (!/error="insufficient_scope"/.test(ch)) fail(`403 challenge lacks error="insufficient_scope": ${ch}`);
  if (!/scope="[^"]*mcp:write[^"]*"/.test(ch)) fail(`403 challenge does not ask for mcp:write: ${ch}`);
  if (refused[0]?.body?.error?.data?.kind !== 'readOnly') fail(`403 JSON-RPC error data.kind is not readOnly: ${JSON.stringify(refused[0]?.body)}`);
  if (!/upscoping/.test(report.write_note_error?.message ?? '')) fail(`SDK error does not come from its upscoping attempt: ${report.write_note_error?.message}`);
  // The session must still be usable after the refusal.
  const e = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
  report.echo_after_refusal = textOf(e);
  if (report.echo_after_refusal !== 'still here') fail(`echo after the refusal returned ${report.echo_after_refusal}`);
}

run(main, () => client?.close().catch(() => {}));
