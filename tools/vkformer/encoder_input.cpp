#include "encoder_input.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

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
    else if (e.truncated)
      std::fprintf(stderr, "vkformer: warning: text #%zu is longer than %u tokens (the model's limit); truncated\n",
                   i + 1, eo.max_length);
    out.push_back(std::move(e.ids));
  }
  return out;
}

void in_batches(size_t n, size_t batch, const std::function<void(size_t, size_t)>& fn) {
  const bool progress = n > 256 && isatty(STDERR_FILENO);
  batch = std::max<size_t>(batch, 1);
  for (size_t b = 0; b < n; b += batch) {
    fn(b, std::min(n, b + batch));
    if (progress) std::fprintf(stderr, "\rvkformer: %zu / %zu", std::min(n, b + batch), n);
  }
  if (progress) std::fprintf(stderr, "\n");
}

}  // namespace vkf::tools
