// Inside a Session: the plan cache, submission, and the calls before their
// wrapper (session.cpp), which a family's generation may use (a recomputing
// logits source runs forward passes).
#pragma once

#include "run/plan_cache.hpp"
#include "vk/check.hpp"
#include "vkformer/session.hpp"

namespace vkf {

struct Session::Impl final : Runner {
  explicit Impl(const Model& m) : Runner(m, m.context()), family(m.family()) {}
  const Family& family;
  PlanCache plans{16};  ///< shapes kept recorded
  uint64_t last_dispatches = 0;  ///< of the last command buffer submitted
  double queue_ms = 0;           ///< in submit() so far: queue submission until the fence
  std::vector<DispatchTiming> last_timings;

  /// Submits and notes what the stats report; device errors say what was submitted.
  void submit(Recorder& rec, const char* what = "a command buffer") override;
  Recorder& step_recorder() override;
  std::unique_ptr<Recorder> step_rec;  ///< step_recorder()'s, made with timestamps iff step_rec_timed
  bool step_rec_timed = false;
  ForwardOutput run_forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt) override {
    return forward(src, tgt);
  }
  /// The family's checked and padded ids for `task`, or its refusal.
  Batch prepare(Task task, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                const RunOptions& o = {}) const;
  /// The plan of the batch's shape (made on first use, not yet recorded).
  Plan& plan(const Batch& b);
  /// Writes the batch into its plan, recorded once, and submits it.
  /// Plan::out as the host reads it after run() (f32).
  std::vector<float> read_out(const Plan& p) const;
  Plan& run(const Batch& b);

  ForwardOutput forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt, const RunOptions& o = {});
  EmbedOutput embed(const std::vector<Ids>& seqs, const RunOptions& o = {});
  std::vector<Ids> generate(const std::vector<Ids>& src, const GenerateOptions& o, RunStats& stats);
  Tensor record_forward(Recorder& rec, const std::vector<Ids>& src, const std::vector<Ids>& tgt, Tensor* out);
};

}  // namespace vkf
