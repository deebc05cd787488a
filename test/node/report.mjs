// report.mjs: what the TypeScript SDK test scripts share. Each prints one JSON line, its
// report, and exits 1 when an expectation failed, 2 on a crash or a timeout.

// newReport starts a script's report with fields, and its deadline: past timeoutMs the script
// gives up as a whole rather than hang the calling test.
export function newReport(fields, timeoutMs) {
  const report = { ...fields, http: [], failures: [] };
  const fail = (msg) => report.failures.push(msg);
  let finished = false;
  const finish = (code) => {
    if (finished) return;
    finished = true;
    report.ok = report.failures.length === 0 && code === 0;
    process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(report.ok ? 0 : code || 1));
  };
  setTimeout(() => {
    fail(`timed out after ${timeoutMs} ms`);
    finish(2);
  }, timeoutMs).unref();

  // recordingFetch logs each request the SDK makes (transport, discovery and token requests
  // all go through it), without credentials: the method, the URL, the status, the challenge
  // header, the auth scheme, for token requests the form fields other than secrets, the
  // JSON-RPC method, and a 403's JSON-RPC error.
  async function recordingFetch(input, init) {
    const req = new Request(input, init);
    const entry = { method: req.method, url: req.url.split('?')[0] };
    const auth = req.headers.get('authorization');
    if (auth) entry.auth = auth.split(' ')[0].toLowerCase(); // scheme only: "bearer" or "basic"
    if (req.method === 'POST' && (req.headers.get('content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
      const form = new URLSearchParams(await req.clone().text());
      entry.form = {};
      for (const key of ['grant_type', 'scope', 'resource']) {
        if (form.has(key)) entry.form[key] = form.get(key);
      }
    } else if (req.method === 'POST') {
      try {
        const body = JSON.parse(await req.clone().text());
        if (body.method) entry.rpc = body.method + (body.params?.name ? ` ${body.params.name}` : '');
      } catch {
        // not JSON: nothing to note
      }
    }
    report.http.push(entry);
    const res = await fetch(req);
    entry.status = res.status;
    const challenge = res.headers.get('www-authenticate');
    if (challenge) entry.www_authenticate = challenge;
    if (res.status === 403) {
      try {
        entry.body = await res.clone().json();
      } catch {
        // a 403 without a JSON body
      }
    }
    return res;
  }

  // run runs main, then close (the client's, whatever main got to), and ends the script.
  function run(main, close) {
    main()
      .then(async () => {
        await close();
        finish(0);
      })
      .catch(async (err) => {
        fail(`${err.name}: ${err.message}`);
        await close();
        finish(2);
      });
  }

  return { report, fail, recordingFetch, run };
}

// textOf is a tool result's text content.
export const textOf = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
