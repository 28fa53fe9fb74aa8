// DecodeBatch: the per-sequence bookkeeping of continuous batching (what
// search()'s greedy_or_sample keeps per source, here per slot) over a family's
// SlotSource, which holds the caches and records the steps.
#include "vkformer/decode_batch.hpp"

#include <algorithm>
#include <utility>

#include "run/search.hpp"
#include "run/session_impl.hpp"
#include "run/slot_source.hpp"
#include "vk/context_impl.hpp"

namespace vkf {

struct DecodeBatch::Seq {
  uint64_t id;
  GenerateOptions o;
  std::vector<int32_t> eos;
  sampling::SplitMix64 rng;  ///< as source 0 of its own generate call: seeded o.seed
  Ids history, out;          ///< prompt + chosen tokens; the chosen tokens
  size_t context_len;
  uint32_t rows = 0;         ///< cache rows it fills
  uint32_t made = 0;         ///< tokens chosen (EOS included)
  int32_t next = 0;          ///< the token the next step feeds
};

std::unique_ptr<DecodeBatch> DecodeBatch::make(Session& session, uint32_t slots, uint32_t max_len,
                                               KvCacheType kv_cache) {
  Session::Impl& s = *session.impl_;
  if (slots == 0 || !s.family.supports(Task::Generate)) return nullptr;
  const DType kv = kv_cache_dtype(kv_cache, s.model.config(), s.ctx.caps());
  std::unique_ptr<SlotSource> src = s.family.slot_source(s, slots, max_len, kv);
  if (!src) return nullptr;
  return std::unique_ptr<DecodeBatch>(new DecodeBatch(session, std::move(src), kv));
}

DecodeBatch::DecodeBatch(Session& s, std::unique_ptr<SlotSource> src, DType kv)
    : session_(s), src_(std::move(src)), kv_(kv) {}
DecodeBatch::~DecodeBatch() = default;

bool DecodeBatch::fits(const Ids& prompt, const GenerateOptions& o) const {
  // The request's cache must be this batch's (an fp16 request the device
  // cannot store runs alone, and gets generate's error).
  const Session::Impl& s = *session_.impl_;
  DType kv = DType::F32;
  try {
    kv = kv_cache_dtype(o.kv_cache, s.model.config(), s.ctx.caps());
  } catch (const Error&) {
    return false;
  }
  // Steps write rows up to prompt + max_new_tokens − 1 (the last token is not fed).
  return o.beam == 1 && o.use_cache && kv == kv_ && !prompt.empty() && o.max_new_tokens > 0 &&
         uint64_t(prompt.size()) + o.max_new_tokens - 1 <= src_->max_len();
}

DType DecodeBatch::kv_cache() const { return kv_; }

bool DecodeBatch::full() const { return live_.size() >= src_->slots(); }
size_t DecodeBatch::size() const { return live_.size(); }

uint64_t DecodeBatch::add(const Ids& prompt, const GenerateOptions& o) {
  Session::Impl& s = *session_.impl_;
  internals(s.ctx).alive("DecodeBatch::add");
  validate(o);
  if (full() || !fits(prompt, o)) throw Error("DecodeBatch::add: the batch is full or the request does not fit");
  const ModelConfig& cfg = s.model.config();
  check_token_options(o, cfg.out_vocab());
  // What the sequence holds before its first new token, as in Session::generate:
  // the prompt, or the decoder's start token of an enc–dec model.
  const int32_t start = decoder_start(cfg, o);
  const Ids context = cfg.encoder_decoder() ? Ids{start} : prompt;
  Seq q{next_id_++, o, stop_tokens(cfg, o), sampling::SplitMix64(o.seed), context, {}, context.size()};
  const std::vector<float> logits =
      with_context([] { return std::string("DecodeBatch::add (prefill)"); },
                   [&] { return src_->prefill(uint32_t(live_.size()), prompt, start); });
  q.rows = uint32_t(context.size());
  const uint64_t id = q.id;
  if (choose(q, logits.data())) live_.push_back(std::move(q));
  else finished_.emplace_back(id, std::move(q.out));
  return id;
}

bool DecodeBatch::choose(Seq& q, const float* row) {
  const uint32_t vocab = session_.impl_->model.config().out_vocab();
  q.next = next_token(row, vocab, q.history, q.context_len, q.eos, q.o, q.rng);
  ++q.made;
  bool done = std::find(q.eos.begin(), q.eos.end(), q.next) != q.eos.end();
  if (!done) {
    q.out.push_back(q.next);
    q.history.push_back(q.next);
    if (q.o.on_token && !q.o.on_token(0, q.next)) done = true;
  }
  return !done && q.made < q.o.max_new_tokens;
}

void DecodeBatch::step() {
  if (live_.empty()) return;
  internals(session_.impl_->ctx).alive("DecodeBatch::step");
  std::vector<int32_t> tokens;
  std::vector<uint32_t> rows;
  for (const Seq& q : live_) {
    tokens.push_back(q.next);
    rows.push_back(q.rows);
  }
  const uint32_t vocab = session_.impl_->model.config().out_vocab();
  const std::vector<float> logits = with_context(
      [&] { return "DecodeBatch::step (" + std::to_string(live_.size()) + " sequences)"; },
      [&] { return src_->step(tokens, rows); });
  std::vector<size_t> ended;
  for (size_t i = 0; i < live_.size(); ++i) {
    ++live_[i].rows;
    if (!choose(live_[i], logits.data() + i * vocab)) ended.push_back(i);
  }
  // Leave from the back, so the last live sequence moved into a gap has not ended.
  for (auto it = ended.rbegin(); it != ended.rend(); ++it) {
    finished_.emplace_back(live_[*it].id, std::move(live_[*it].out));
    const size_t last = live_.size() - 1;
    if (*it != last) {
      with_context([] { return std::string("DecodeBatch::step (packing the slots)"); },
                   [&] { src_->move(uint32_t(last), uint32_t(*it), live_[last].rows); });
      live_[*it] = std::move(live_[last]);
    }
    live_.pop_back();
  }
}

std::vector<std::pair<uint64_t, Ids>> DecodeBatch::take_finished() { return std::exchange(finished_, {}); }

void DecodeBatch::clear() {
  live_.clear();
  finished_.clear();
}

}  // namespace vkf
