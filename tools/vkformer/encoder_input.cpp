#include "encoder_input.hpp"

#include <algorithm>
#include <cstdio>

#include "progress.hpp"

namespace vkf::tools {

uint32_t token_limit(const Tokenizer& tok, const ModelInfo& info) {
  uint32_t limit = 0;
  for (uint32_t l : {info.max_tokens, info.max_seq_length, tok.model_max_length()})
    if (l > 0) limit = limit ? std::min(limit, l) : l;
  return limit;
}

std::vector<Ids> encode_texts(const Tokenizer& tok, const ModelInfo& info, const std::vector<std::string>& texts,
                              std::vector<bool>* truncated) {
  EncodeOptions eo;
  eo.max_length = token_limit(tok, info);
  std::vector<Ids> out;
  size_t cut = 0;  // texts truncated; the first few are named, then a count
  constexpr size_t kNamed = 3;
  if (truncated) truncated->assign(texts.size(), false);
  for (size_t i = 0; i < texts.size(); ++i) {
    Encoding e;
    try {
      if (info.architecture.empty()) e.ids = tok.encode(texts[i]);
      else e = tok.encode_with(info.lowercase ? unicode_lower(texts[i]) : texts[i], eo);
    } catch (const Error& err) {
      throw Error("text #" + std::to_string(i + 1) + ": " + err.what());
    }
    if (truncated) (*truncated)[i] = e.truncated;
    else if (e.truncated && ++cut <= kNamed)
      std::fprintf(stderr, "vkformer: warning: text #%zu is longer than %u tokens (the model's limit); truncated\n",
                   i + 1, eo.max_length);
    out.push_back(std::move(e.ids));
  }
  if (cut > kNamed)
    std::fprintf(stderr, "vkformer: warning: %zu more texts are longer than %u tokens; truncated too\n", cut - kNamed,
                 eo.max_length);
  return out;
}

size_t in_batches(size_t n, size_t batch, const std::function<void(size_t, size_t)>& fn) {
  Progress progress("batches", n, "texts");
  batch = std::max<size_t>(batch, 1);
  for (size_t b = 0; b < n;) {
    const size_t e = std::min(n, b + batch);
    try {
      fn(b, e);
    } catch (const Error& err) {
      // A batch whose activations one binding of the device cannot hold is
      // refused while recording, before anything runs: halve it and go on.
      if (e - b < 2 || std::string(err.what()).find("maxStorageBufferRange") == std::string::npos) throw;
      batch = (e - b) / 2;
      std::fprintf(stderr, "vkformer: a batch of %zu texts does not fit one binding of the device; batches of %zu\n",
                   e - b, batch);
      continue;
    }
    b = e;
    progress.update(b);
  }
  return batch;
}

}  // namespace vkf::tools
