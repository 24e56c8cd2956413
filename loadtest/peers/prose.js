// The simulated model every peer worker runs: the density benchmark's
// completion shape (12 chunks of 95 bytes, about 1.2 KB, ending in a
// run_command tool call; a 350-byte tool result), from English-like prose
// drawn from loadtest/density/words.txt with a Zipf-like rank distribution,
// deterministic per (agent, turn, step). Our code, written for this
// benchmark; it makes the model cost the same kind of work in every worker.
'use strict';
const fs = require('fs');
const path = require('path');
const { makeProse } = require('./prose_core');

const words = fs.readFileSync(path.join(__dirname, '..', 'density', 'words.txt'), 'utf8').split(/\s+/).filter(Boolean);

module.exports = makeProse(words);
