// The family contract: what a "model_type" means, from config.json to the
// dispatches of a pass. Session and Model::load are generic; everything that
// depends on the architecture is a Family's answer (docs/adding-a-family.md).
// It lives here, below both model/ (which loads through it) and run/ (which
// plans and runs through it), so that neither includes the plug-ins' folder.
//
// A family lives in src/families/<name>/, defines `const Family&
// <name>_family()`, and is registered by one line vkf_add_family(<name>) in
// src/families/families.cmake, which generates the table families() returns.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/config_reader.hpp"
#include "model/loader.hpp"
#include "vkformer/recorder.hpp"
#include "vkformer/session.hpp"

namespace vkf {

class LogitsSource;
class SlotSource;

/// A family's own config.json settings, beyond ModelConfig's generic fields
/// (ModelConfig::family_config); e.g. UseLiteConfig.
struct FamilyConfig {
  virtual ~FamilyConfig() = default;
};

/// The shape a plan is made and recorded for.
struct PlanKey {
  Task task = Task::Forward;
  uint32_t batch = 0;
  uint32_t len = 0;   ///< padded length of the source (or only) side
  uint32_t len2 = 0;  ///< padded length of the target side; 0 without one
  uint32_t mode = 0;  ///< the family's choice of output (a head, pooling...); 0 by default
  bool operator==(const PlanKey& o) const {
    return task == o.task && batch == o.batch && len == o.len && len2 == o.len2 && mode == o.mode;
  }
};

/// One call's ids, checked and padded: the plan they need and what to write into it.
struct Batch {
  PlanKey key;
  std::vector<std::vector<int32_t>> inputs;  ///< written, in order, into Plan::inputs
  std::vector<uint32_t> lengths;             ///< valid rows of each sequence of the output
};

/// Buffers for one PlanKey, and the command buffer recorded on them once and
/// resubmitted. A family derives its own (its activations, scratch, outputs).
struct Plan {
  virtual ~Plan() = default;
  std::vector<Tensor> inputs;  ///< i32 tensors holding Batch::inputs
  /// The result, set by Family::record: [batch, len, dim] for forward, [batch, dim] for embed.
  Tensor out;
  /// How a failed submission names it ("submitting <what> of N dispatches").
  const char* what = "a command buffer";
  std::unique_ptr<Recorder> rec;  ///< made by the Session (with or without timestamps)
  bool recorded = false;
  /// Where the host writes each of `inputs` and reads `out` (Recorder::Impl::
  /// host_input, host_output): the tensors themselves on a device the host
  /// maps, else host-visible buffers copied inside the command buffer, so one
  /// pass is one submission on a discrete GPU too. Set by Session::Impl::run.
  std::vector<uint8_t*> host_inputs;
  const uint8_t* host_out = nullptr;
};

/// What a family's generation may use of the Session it runs in (Session::Impl
/// is one): the model and device, submission, and whole forward passes. Narrow
/// on purpose: a family never sees the session's plan cache or statistics.
class Runner {
 public:
  Runner(const Model& m, Context& c) : model(m), ctx(c) {}
  virtual ~Runner() = default;
  const Model& model;
  Context& ctx;
  bool profiling = false;  ///< recorders take timestamps (Session::set_profiling)

  /// Submits `rec` and waits; a device error says it was submitting `what`.
  virtual void submit(Recorder& rec, const char* what = "a command buffer") = 0;
  /// An empty recorder for a decode step, the same one each call (reset, with
  /// timestamps as `profiling` says): its command pool, command buffers and
  /// descriptor pools are made once, not each token. What an earlier call
  /// recorded into it is gone, so a step submits and reads before the next.
  virtual Recorder& step_recorder() = 0;
  /// One whole forward pass (Session::forward without options): what a
  /// recomputing logits source runs each step.
  virtual ForwardOutput run_forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt) = 0;
};

class Family {
 public:
  virtual ~Family() = default;
  /// config.json's "model_type".
  virtual const char* name() const = 0;
  /// Other model_types the family reads (e.g. "roberta" for "bert").
  virtual std::vector<std::string> aliases() const { return {}; }

  /// Reads the family's keys (model_type is already read): the generic
  /// fields into `c`, its own into c.family_config. @throws through r.fail().
  virtual void read_config(const ConfigReader& r, ModelConfig& c) const = 0;
  /// Every tensor the config implies, through `L`, which is a dry run, a check
  /// without a device, or the upload (model/weights.cpp runs the sequence).
  virtual std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const = 0;

  /// What a Session may ask of this family's models.
  virtual bool supports(Task task) const = 0;
  /// The error for a task it does not support.
  virtual std::string refusal(Task task) const;
  /// Model::info(): what the output means. By default, nothing beyond the defaults.
  virtual ModelInfo info(const Model&) const { return {}; }
  /// Width of forward()'s rows, or of embed()'s vectors.
  virtual uint32_t output_dim(const Model& m) const = 0;

  /// Checks and pads a forward (src, tgt) or embed (src) call's ids, with its options.
  /// @throws vkf::Error naming the sequence and the id or length that is wrong.
  virtual Batch prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                        const RunOptions& o) const = 0;
  /// The buffers of one shape (the Session adds the Recorder).
  virtual std::unique_ptr<Plan> make_plan(const Model& m, const PlanKey& key) const = 0;
  /// Records the pass on the plan's buffers into `rec` and sets p.out. Each
  /// recording must leave the output in the same place (it may be recorded
  /// again into a host's recorder by Session::record_forward).
  virtual void record(Recorder& rec, const Model& m, Plan& p) const = 0;

  /// Next-token logits for Session::generate (only asked if supports(Task::Generate)).
  virtual std::unique_ptr<LogitsSource> logits_source(Runner& s, const std::vector<Ids>& src,
                                                      const GenerateOptions& o) const;
  /// A continuous decode batch of `slots` sequences of up to `max_len` rows
  /// (vkformer/decode_batch.hpp), its KV caches stored as `kv_cache` (f32 or
  /// f16: kv_cache_dtype()); nullptr (the default) if the family has none.
  virtual std::unique_ptr<SlotSource> slot_source(Runner& s, uint32_t slots, uint32_t max_len,
                                                  DType kv_cache) const;

 protected:
  /// For families without RunOptions: an error naming the first option that is set.
  void refuse_options(const RunOptions& o) const;
};

/// Every registered family, in registration order (generated from families.cmake).
const std::vector<const Family*>& families();
/// The family whose name() is `model_type`; nullptr if none.
const Family* find_family(const std::string& model_type);
/// The family of a config. @throws vkf::Error for an unknown model_type.
const Family& family_of(const ModelConfig& c);
/// "unknown "model_type" "x" (known: "a", "b")".
std::string unknown_model_type(const std::string& model_type);

}  // namespace vkf
