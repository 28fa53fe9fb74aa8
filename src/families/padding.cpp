#include "families/padding.hpp"

#include <algorithm>
#include <string>

namespace vkf {

PaddedIds pad_batch(const std::vector<Ids>& seqs, const ModelConfig& cfg, uint32_t vocab, const char* side) {
  const int32_t pad_id = cfg.pad_by_position ? -1 : cfg.pad_id;
  if (seqs.empty()) throw Error(std::string("no ") + side + " sequences were given");
  PaddedIds p;
  p.batch = uint32_t(seqs.size());
  for (size_t b = 0; b < seqs.size(); ++b) {
    const Ids& s = seqs[b];
    const std::string which = std::string(side) + " sequence " + std::to_string(b + 1);
    if (s.empty()) throw Error(which + " is empty");
    if (s.size() > cfg.max_positions)
      throw Error(which + " has " + std::to_string(s.size()) + " tokens, more than the model's " +
                  std::to_string(cfg.max_positions) + " positions (config.json \"" + cfg.positions_key + "\")");
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] < 0 || uint32_t(s[i]) >= vocab)
        throw Error(which + ": id " + std::to_string(s[i]) + " at position " + std::to_string(i) +
                    " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    p.len = std::max<uint32_t>(p.len, uint32_t(s.size()));
    p.lengths.push_back(uint32_t(s.size()));
  }
  // Without a padding token (pad_id < 0), padding is filled with id 0 and masked by position.
  p.ids.assign(size_t(p.batch) * p.len, std::max(pad_id, 0));
  p.pad.assign(p.ids.size(), 1);
  for (uint32_t b = 0; b < p.batch; ++b)
    for (uint32_t i = 0; i < p.lengths[b]; ++i) {
      p.ids[size_t(b) * p.len + i] = seqs[b][i];
      p.pad[size_t(b) * p.len + i] = seqs[b][i] == pad_id;
    }
  return p;
}

}  // namespace vkf
