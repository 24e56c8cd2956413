// The simulated model's algorithm (see prose.js): the prose generator for
// a given word list, with no I/O, so that the Node workers (prose.js reads
// loadtest/density/words.txt) and the Cloudflare worker (words bundled as
// text by esbuild) run the same code. Our code, written for this benchmark.
'use strict';

const CHUNKS = 12;
const CHUNK_BYTES = 95;
const RESULT_BYTES = 350;
const TOOL = 'run_command';
const TOOL_ARGS = '{"command": "cargo test --workspace"}';

function makeProse(words) {
  // fnv1a32 of the parts, a zero byte after each.
  function seedOf(...parts) {
    let h = 0x811c9dc5;
    for (const p of parts) {
      const s = String(p);
      for (let i = 0; i < s.length; i++) {
        h ^= s.charCodeAt(i);
        h = Math.imul(h, 0x01000193) >>> 0;
      }
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h;
  }

  // mulberry32: a small seeded PRNG returning floats in [0, 1).
  function rng(seed) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // text returns exactly n bytes of prose for the seed.
  function text(seed, n) {
    const r = rng(seed);
    let out = '';
    let start = true;
    while (out.length < n) {
      // rank ~ vocab^u: frequent words often, rare ones sometimes.
      let w = words[Math.min(words.length - 1, Math.floor(Math.pow(words.length, r())) - 1)];
      if (start) { w = w[0].toUpperCase() + w.slice(1); start = false; }
      out += w;
      const p = r();
      if (p < 0.08) { out += '. '; start = true; } else if (p < 0.14) { out += ', '; } else { out += ' '; }
    }
    return out.slice(0, n);
  }

  // completion is the simulated model's answer to one request: the first
  // of a turn ends in the tool call, the second is plain text.
  function completion(agent, turn, step) {
    let s = '';
    for (let i = 0; i < CHUNKS; i++) s += text(seedOf('chunk', agent, turn, step, i), CHUNK_BYTES);
    if (step === 0) return { role: 'assistant', text: s, tool_call: { id: `call_${turn}`, name: TOOL, arguments: TOOL_ARGS } };
    return { role: 'assistant', text: s };
  }

  const toolResult = (agent, turn) => text(seedOf('result', agent, turn), RESULT_BYTES);
  const userText = (agent, turn) => text(seedOf('user', agent, turn), 120);
  return { completion, toolResult, userText, text, seedOf, CHUNKS, CHUNK_BYTES };
}

module.exports = { makeProse };
