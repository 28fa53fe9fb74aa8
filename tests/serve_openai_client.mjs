// OpenAI's official Node client (npm openai, pinned in tools/openai_client) against
// `vkformer serve`: embeddings, a completion, and a streamed completion. Prints one
// JSON object for tests/cli_serve.py to compare with the CLI's own results.
//   node serve_openai_client.mjs BASE_URL EMBED_MODEL GEN_MODEL TEXT PROMPT
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "tools", "openai_client", "package.json"));
const OpenAI = require("openai");

const [base, embedModel, genModel, text, prompt] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + "/v1", apiKey: "unused", maxRetries: 0 });

const e = await client.embeddings.create({ model: embedModel, input: [text], encoding_format: "float" });
const c = await client.completions.create({ model: genModel, prompt, temperature: 0 });
let streamed = "";
let chunks = 0;
const stream = await client.completions.create({ model: genModel, prompt, temperature: 0, stream: true });
for await (const part of stream) {
  streamed += part.choices[0].text;
  chunks += 1;
}
let error = null;
try {
  await client.embeddings.create({ model: "no-such-model", input: "x" });
} catch (err) {
  error = { status: err.status, message: err.message };
}
console.log(JSON.stringify({ embedding: e.data[0].embedding, usage: e.usage, text: c.choices[0].text,
                             finish: c.choices[0].finish_reason, streamed, chunks, error }));
