// ts-stepup.mjs: step-up within one session with the TypeScript MCP SDK client.
//
// The client starts with client credentials for scope "mcp:use", so gemgate opens a read-only
// session; write_note is refused with 403 insufficient_scope. Then the script re-authorizes
// on the same transport with "mcp:use mcp:write" and calls write_note again on the SAME
// session id, which must succeed, served by the user's read-write worker.
//
// Who does what (SDK 1.32.2):
// - The SDK, on the 403: StreamableHTTPClientTransport.send() reads the challenge, stores its
//   scope ("mcp:use mcp:write") in the transport and calls auth() once. But for
//   client_credentials, fetchToken() asks provider.prepareTokenRequest() for
//   provider.clientMetadata.scope, the scope the provider was built with ("mcp:use"), not the
//   challenge's; so it fetches another read-only token, resends, gets the same 403 and throws
//   StreamableHTTPError(403, "...after trying upscoping"). The SDK cannot widen the scope of a
//   client_credentials provider by itself.
// - The script: sets provider.clientMetadata.scope to "mcp:use mcp:write" and calls the SDK's
//   exported auth(provider, {serverUrl}) itself (discovery and the token request are the
//   SDK's), which stores the wider token in the provider; the transport keeps its session id
//   and sends the new bearer on the next request. Then it retries write_note, and waits for
//   the notifications/tools/list_changed gemgate sends on the step-up (the SDK's GET stream
//   carries it; the SDK drops a notification whose params is null as malformed).
//
// It prints one JSON line (no token, secret or session id: the session id only as a SHA-256
// prefix, enough to compare) and exits 1 when an expectation fails, 2 on a crash.
//
// Usage: node ts-stepup.mjs --url URL --issuer ISSUER --client-id ID [--user NAME]
// with the client secret in GEMGATE_CLIENT_SECRET.

import { newReport, textOf } from './report.mjs';
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';

const { values: flags } = parseArgs({
  options: {
    url: { type: 'string' },
    issuer: { type: 'string' },
    'client-id': { type: 'string' },
    user: { type: 'string' },
    timeout: { type: 'string' },
  },
  strict: true,
});
const opt = {
  url: flags.url ?? process.env.GEMGATE_URL,
  issuer: flags.issuer ?? process.env.GEMGATE_ISSUER,
  clientId: flags['client-id'] ?? process.env.GEMGATE_CLIENT_ID,
  clientSecret: process.env.GEMGATE_CLIENT_SECRET,
  timeoutMs: Number(flags.timeout ?? process.env.GEMGATE_TIMEOUT_MS ?? 60000),
};
opt.user = flags.user ?? opt.clientId;
for (const k of ['url', 'issuer', 'clientId', 'clientSecret']) {
  if (!opt[k]) {
    console.error(`ts-stepup: missing ${k} (see the usage at the top of ts-stepup.mjs)`);
    process.exit(2);
  }
}

const READ_ONLY = 'mcp:use';
const READ_WRITE = 'mcp:use mcp:write';
const { report, fail, recordingFetch, run } = newReport({ client: 'typescript-sdk', user: opt.user }, opt.timeoutMs);

const hashID = (id) => (id ? createHash('sha256').update(id).digest('hex').slice(0, 16) : null);

let client;

async function main() {
  const provider = new ClientCredentialsProvider({
    clientId: opt.clientId,
    clientSecret: opt.clientSecret,
    scope: READ_ONLY,
    clientName: 'gemgate-ts-stepup-test',
    expectedIssuer: opt.issuer,
  });
  const transport = new StreamableHTTPClientTransport(new URL(opt.url), { authProvider: provider, fetch: recordingFetch });
  client = new Client({ name: 'gemgate-ts-stepup-test', version: '1.0.0' });
  // Tool list changes on step-up arrive as notifications/tools/list_changed.
  let listChanged = 0;
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === 'notifications/tools/list_changed') listChanged++;
  };

  await client.connect(transport);
  report.session_before = hashID(transport.sessionId);
  if (!transport.sessionId) fail('no MCP-Session-Id after initialize');
  report.whoami_before = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
  if (!report.whoami_before.includes('read_only=true')) fail(`the mcp:use session is not read-only: ${report.whoami_before}`);
  report.tools_before = (await client.listTools()).tools.map((t) => t.name).sort();

  // 1. The SDK's own upscoping: one more token request, for the provider's scope, then an error.
  let mark = report.http.length;
  try {
    const w = await client.callTool({ name: 'write_note', arguments: { name: 'stepup', text: 'not yet' } });
    fail(`write_note in the read-only session was not refused: ${textOf(w)}`);
  } catch (err) {
    report.sdk_error = { name: err.name, code: err.code, message: err.message };
  }
  const first = report.http.slice(mark);
  report.sdk_upscoping = {
    http_403s: first.filter((e) => e.rpc === 'tools/call write_note' && e.status === 403).length,
    token_scopes: first.filter((e) => e.form).map((e) => e.form.scope),
    challenge: first.find((e) => e.status === 403)?.www_authenticate,
  };
  if (report.sdk_error?.code !== 403) fail(`the SDK did not fail write_note with its 403 error: ${JSON.stringify(report.sdk_error)}`);
  if (!/error="insufficient_scope"/.test(report.sdk_upscoping.challenge ?? '')) fail('the 403 did not say insufficient_scope');
  if (report.sdk_upscoping.token_scopes.some((s) => s !== READ_ONLY)) {
    fail(`the SDK's upscoping asked for ${report.sdk_upscoping.token_scopes}: it widened the scope by itself, so this script's re-authorization is no longer needed`);
  }

  // 2. The script's step-up: widen the provider's scope and run the SDK's auth() again.
  mark = report.http.length;
  provider.clientMetadata.scope = READ_WRITE;
  const result = await auth(provider, { serverUrl: new URL(opt.url), fetchFn: recordingFetch });
  report.reauthorize = { result, token_scopes: report.http.slice(mark).filter((e) => e.form).map((e) => e.form.scope) };
  if (result !== 'AUTHORIZED') fail(`auth() answered ${result}`);

  // 3. The same session, now read-write.
  const w = await client.callTool({ name: 'write_note', arguments: { name: 'stepup', text: 'after step-up' } });
  report.write_note = { is_error: Boolean(w.isError), text: textOf(w) };
  if (w.isError) fail(`write_note after the step-up failed: ${textOf(w)}`);
  report.session_after = hashID(transport.sessionId);
  if (report.session_after !== report.session_before) fail('the session id changed across the step-up');
  report.whoami_after = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
  if (!report.whoami_after.includes('read_only=false')) fail(`whoami after the step-up: ${report.whoami_after}`);
  report.tools_after = (await client.listTools()).tools.map((t) => t.name).sort();
  if (!report.tools_after.includes('write_note')) fail(`tools/list after the step-up lacks write_note: ${report.tools_after}`);
  // gemgate queues notifications/tools/list_changed for the session's stream when it steps
  // up; the SDK's standalone GET stream carries it. Wait for it, with a bound.
  for (let waited = 0; listChanged === 0 && waited < 5000; waited += 50) {
    await new Promise((r) => setTimeout(r, 50));
  }
  report.list_changed = listChanged;
  if (listChanged === 0) fail('no notifications/tools/list_changed within 5 s of the step-up');
  await transport.terminateSession();
}

run(main, () => client?.close().catch(() => {}));
