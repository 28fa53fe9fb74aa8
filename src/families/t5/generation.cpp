// Where generate() gets next-token logits from for a T5 model (filled in below).
#include "families/t5/family.hpp"
#include "run/logits_source.hpp"

namespace vkf {

std::unique_ptr<LogitsSource> T5Family::logits_source(Session::Impl&, const std::vector<Ids>&,
                                                      const GenerateOptions&) const {
  throw Error("t5 generation: not yet");
}

}  // namespace vkf
