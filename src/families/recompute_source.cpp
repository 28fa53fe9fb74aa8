#include "families/recompute_source.hpp"

#include <algorithm>

namespace vkf {
namespace {

/// Every step runs the whole forward pass on each slot's full history.
class RecomputeSource : public LogitsSource {
 public:
  RecomputeSource(Runner& s, const std::vector<Ids>& src, uint32_t beam, int32_t start)
      : s_(s), encdec_(s.model.config().encoder_decoder()) {
    for (const Ids& x : src)
      for (uint32_t j = 0; j < beam; ++j) {
        src_.push_back(x);
        hist_.push_back(encdec_ ? Ids{start} : x);
      }
  }
  std::vector<float> start() override { return last_logits(); }
  std::vector<float> step(const std::vector<int32_t>& tokens,
                          const std::vector<int32_t>& parents) override {
    std::vector<Ids> next(hist_.size());
    for (size_t i = 0; i < next.size(); ++i) {
      next[i] = hist_[size_t(parents[i])];
      next[i].push_back(tokens[i]);
    }
    hist_ = std::move(next);
    return last_logits();
  }

 private:
  std::vector<float> last_logits() {
    ForwardOutput o = encdec_ ? s_.run_forward(src_, hist_) : s_.run_forward(hist_, {});
    std::vector<float> out(size_t(o.batch) * o.dim);
    for (uint32_t b = 0; b < o.batch; ++b)
      std::copy_n(o.data.begin() + (size_t(b) * o.len + o.lengths[b] - 1) * o.dim, o.dim,
                  out.begin() + size_t(b) * o.dim);
    return out;
  }
  Runner& s_;
  bool encdec_;
  std::vector<Ids> src_, hist_;
};

}  // namespace

std::unique_ptr<LogitsSource> recompute_source(Runner& s, const std::vector<Ids>& src, uint32_t beam,
                                               int32_t start) {
  return std::make_unique<RecomputeSource>(s, src, beam, start);
}

}  // namespace vkf
