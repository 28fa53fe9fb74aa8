// Session: every call goes through one wrapper (the device must be alive,
// device errors name the call, stats() say what it did) and asks the model's
// family what the architecture needs; plans are cached by shape.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "run/search.hpp"
#include "run/session_impl.hpp"
#include "vk/context_impl.hpp"
#include "vk/recorder_impl.hpp"

namespace vkf {
namespace {

std::string count(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

/// Runs body(stats of this call) as Session call `call`. A device lost before
/// says so naming the call; a VulkanError from the body gets the tag
/// "<call> (<describe(stats so far)>)"; on success `stats` are this call's.
template <class Describe, class Body>
auto guarded(Session::Impl& s, RunStats& stats, const char* call, Describe&& describe, Body&& body) {
  internals(s.ctx).alive(call);
  s.last_dispatches = 0;
  s.last_timings.clear();
  RunStats run;
  const uint64_t before = s.ctx.submissions();
  const double queued = s.queue_ms;
  auto result = with_context([&] { return std::string(call) + " (" + describe(run) + ")"; },
                             [&] { return body(run); });
  run.submissions = s.ctx.submissions() - before;
  run.queue_ms = s.queue_ms - queued;
  run.dispatches = s.last_dispatches;
  run.timings = std::move(s.last_timings);
  stats = std::move(run);
  return result;
}

/// Times each decode step of `inner` into `stats`: its wall time, the part of
/// it in the queue (Session::Impl::submit) and its submissions, so that a
/// step's cost splits into the device's and the host's.
class MeteredSource final : public LogitsSource {
 public:
  MeteredSource(LogitsSource& inner, const Session::Impl& s, RunStats& stats) : inner_(inner), s_(s), stats_(stats) {}
  std::vector<float> start() override { return inner_.start(); }
  std::vector<float> step(const std::vector<int32_t>& tokens, const std::vector<int32_t>& parents) override {
    const auto t0 = std::chrono::steady_clock::now();
    const double queued = s_.queue_ms;
    const uint64_t submitted = s_.ctx.submissions();
    std::vector<float> logits = inner_.step(tokens, parents);
    stats_.step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    stats_.step_queue_ms.push_back(s_.queue_ms - queued);
    stats_.step_submissions = s_.ctx.submissions() - submitted;
    ++stats_.steps;
    return logits;
  }

 private:
  LogitsSource& inner_;
  const Session::Impl& s_;
  RunStats& stats_;
};

}  // namespace

void Session::Impl::submit(Recorder& rec, const char* what) {
  with_context([&] { return std::string("submitting ") + what + " of " + std::to_string(rec.dispatches()) +
                            " dispatches"; },
               [&] {
                 const auto t0 = std::chrono::steady_clock::now();
                 ctx.submit(rec);
                 queue_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
               });
  last_dispatches = rec.dispatches();
  last_timings = rec.timings();
}

Recorder& Session::Impl::step_recorder() {
  if (!step_rec || step_rec_timed != profiling) {
    step_rec = std::make_unique<Recorder>(ctx, profiling);
    step_rec_timed = profiling;
  } else {
    step_rec->reset();
  }
  return *step_rec;
}

Batch Session::Impl::prepare(Task task, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                             const RunOptions& o) const {
  if (!family.supports(task)) throw Error(family.refusal(task));
  return family.prepare(task, model, src, tgt, o);
}

Plan& Session::Impl::plan(const Batch& b) {
  return plans.get(b.key, [&] {
    auto p = family.make_plan(model, b.key);
    p->rec = std::make_unique<Recorder>(ctx, profiling);
    return p;
  });
}

Plan& Session::Impl::run(const Batch& b) {
  Plan& p = plan(b);
  if (!p.recorded) {  // once per shape; later calls resubmit the same command buffer
    p.host_inputs.clear();  // a recording that failed half-way starts again
    for (const Tensor& in : p.inputs) p.host_inputs.push_back(internals(*p.rec).host_input(in));
    family.record(*p.rec, model, p);
    p.host_out = internals(*p.rec).host_output(p.out);
    p.recorded = true;
  }
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    if (b.inputs[i].size() * 4 != p.inputs[i].bytes())
      throw Error("internal: input " + std::to_string(i) + " of " + std::to_string(b.inputs[i].size()) +
                  " ids for " + p.inputs[i].describe());
    std::memcpy(p.host_inputs[i], b.inputs[i].data(), p.inputs[i].bytes());
  }
  submit(*p.rec, p.what);
  return p;
}

std::vector<float> Session::Impl::read_out(const Plan& p) const {
  std::vector<float> out(size_t(p.out.numel()));
  std::memcpy(out.data(), p.host_out, out.size() * 4);  // out is f32 (Plan::out)
  return out;
}

ForwardOutput Session::Impl::forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                                     const RunOptions& opts) {
  const Batch b = prepare(Task::Forward, src, tgt, opts);
  const Plan& p = run(b);
  ForwardOutput o;
  o.batch = b.key.batch;
  o.len = uint32_t(p.out.dim(1));
  o.dim = uint32_t(p.out.dim(-1));
  o.lengths = b.lengths;
  o.data = read_out(p);
  for (uint32_t i = 0; i < o.batch; ++i)  // positions past a sequence's end are zero
    std::fill(o.data.begin() + (size_t(i) * o.len + o.lengths[i]) * o.dim,
              o.data.begin() + size_t(i + 1) * o.len * o.dim, 0.0f);
  return o;
}

EmbedOutput Session::Impl::embed(const std::vector<Ids>& seqs, const RunOptions& opts) {
  const Batch b = prepare(Task::Embed, seqs, {}, opts);
  const Plan& p = run(b);
  EmbedOutput o;
  o.batch = b.key.batch;
  o.dim = uint32_t(p.out.dim(-1));
  o.lengths = b.lengths;
  o.data = read_out(p);
  return o;
}

std::vector<Ids> Session::Impl::generate(const std::vector<Ids>& src, const GenerateOptions& o, RunStats& stats) {
  if (!family.supports(Task::Generate)) throw Error(family.refusal(Task::Generate));
  validate(o);
  if (src.empty()) throw Error("no source sequences were given");
  const ModelConfig& cfg = model.config();
  std::vector<Ids> sources = src;
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i].empty() && !cfg.encoder_decoder()) {
      if (o.bos_token_id < 0)
        throw Error("prompt #" + std::to_string(i + 1) +
                    " is empty and the model has no bos_token_id (generation_config.json) to start from");
      sources[i] = {o.bos_token_id};
    }
  check_token_options(o, cfg.out_vocab());
  if (o.max_new_tokens == 0) return std::vector<Ids>(sources.size());
  std::unique_ptr<LogitsSource> logits = family.logits_source(*this, sources, o);
  // What each sequence holds before its first new token, as HF's input_ids: the
  // prompt of a decoder-only model, the decoder's start token of an enc-dec one.
  std::vector<Ids> contexts =
      cfg.encoder_decoder() ? std::vector<Ids>(sources.size(), Ids{decoder_start(cfg, o)}) : sources;
  MeteredSource metered(*logits, *this, stats);
  return search(metered, contexts, cfg, o);
}

Tensor Session::Impl::record_forward(Recorder& rec, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                                     Tensor* out) {
  const Batch b = prepare(Task::Forward, src, tgt);
  Plan& p = plan(b);
  const uint64_t before = rec.dispatches();
  for (size_t i = 0; i < b.inputs.size(); ++i)  // the ids travel inside the command buffer
    internals(rec).update(p.inputs[i], b.inputs[i].data(), b.inputs[i].size() * 4);
  family.record(rec, model, p);
  if (out) {
    if (out->numel() != p.out.numel() || out->dtype() != DType::F32)
      throw Error("record_forward: out " + out->describe() + " must hold " + std::to_string(p.out.numel()) +
                  " f32 values like " + p.out.describe());
    CopyRowsArgs c;
    c.src = &p.out;
    c.dst = out;
    c.width = uint32_t(p.out.numel());
    c.src_row_stride = c.dst_row_stride = c.width;
    copy_rows(rec, c);
  }
  last_dispatches = rec.dispatches() - before;
  return p.out;
}

Session::Session(std::shared_ptr<Model> model)
    : model_(std::move(model)), impl_(std::make_unique<Impl>(*model_)) {}
Session::~Session() = default;

ForwardOutput Session::forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt) {
  return forward(src, tgt, RunOptions{});
}

ForwardOutput Session::forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt, const RunOptions& o) {
  return guarded(
      *impl_, stats_, "Session::forward", [&](const RunStats&) { return count(src.size(), "sequence", "sequences"); },
      [&](RunStats&) { return impl_->forward(src, tgt, o); });
}

std::vector<Ids> Session::generate(const std::vector<Ids>& src, const GenerateOptions& o) {
  return guarded(
      *impl_, stats_, "Session::generate",
      [&](const RunStats& r) {
        return count(src.size(), "sequence", "sequences") + ", beam " + std::to_string(o.beam) + ", after " +
               std::to_string(r.steps) + " decode steps";
      },
      [&](RunStats& r) { return impl_->generate(src, o, r); });
}

EmbedOutput Session::embed(const std::vector<Ids>& seqs) { return embed(seqs, RunOptions{}); }

EmbedOutput Session::embed(const std::vector<Ids>& seqs, const RunOptions& o) {
  return guarded(
      *impl_, stats_, "Session::embed", [&](const RunStats&) { return count(seqs.size(), "sentence", "sentences"); },
      [&](RunStats&) { return impl_->embed(seqs, o); });
}

Tensor Session::record_forward(Recorder& rec, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                               Tensor* out) {
  return guarded(
      *impl_, stats_, "Session::record_forward",
      [&](const RunStats&) { return count(src.size(), "sequence", "sequences"); },
      [&](RunStats&) { return impl_->record_forward(rec, src, tgt, out); });
}

void Session::set_profiling(bool on) {
  if (impl_->profiling == on) return;
  impl_->profiling = on;
  impl_->plans.clear();  // recorded with or without timestamps
}

}  // namespace vkf
