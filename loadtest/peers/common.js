// What both peer workers share: the harness's callback (a POST of JSON to
// PEERS_HARNESS_URL + path, retried while the harness is briefly unreachable).
'use strict';
const HARNESS = process.env.PEERS_HARNESS_URL;
if (!HARNESS) {
  console.error('PEERS_HARNESS_URL is not set (the Go harness sets it)');
  process.exit(2);
}

async function notify(path, body) {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(HARNESS + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (res.ok) return;
      throw new Error(`harness answered ${res.status} to ${path}`);
    } catch (err) {
      if (attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
    }
  }
}

module.exports = { notify };
