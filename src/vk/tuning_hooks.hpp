// What the tuner and `bench ops|model --tuning compare` do to a context's
// tuning: force one configuration of an op, suspend the database, or record the
// shape classes ops look up.
// Internal (tools only): applications choose tuning with ContextOptions::tuning.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "vk/context_impl.hpp"

namespace vkf {

/// The tuning choice in force: `given` (ContextOptions::tuning, --tuning),
/// else VKFORMER_TUNING, else "auto" (src/vk/tuning.cpp).
std::string tuning_choice(const std::string& given);

/// While alive, `op` runs with `config` instead of the database's entry; an
/// empty config means the engine's own rules. Not thread-safe: tools only.
class ForcedTuning {
 public:
  ForcedTuning(Context& ctx, std::string op, TunedConfig config) : impl_(internals(ctx)), op_(std::move(op)) {
    impl_.tuning_forced[op_] = std::move(config);
  }
  ~ForcedTuning() { impl_.tuning_forced.erase(op_); }
  ForcedTuning(const ForcedTuning&) = delete;
  ForcedTuning& operator=(const ForcedTuning&) = delete;

 private:
  Context::Impl& impl_;
  std::string op_;
};

/// While alive, no op uses the database: all run the engine's own rules (bench
/// model --tuning compare records one session so, beside one with the database).
class TuningSuspended {
 public:
  explicit TuningSuspended(Context& ctx) : impl_(internals(ctx)) { impl_.tuning_suspended = true; }
  ~TuningSuspended() { impl_.tuning_suspended = false; }
  TuningSuspended(const TuningSuspended&) = delete;
  TuningSuspended& operator=(const TuningSuspended&) = delete;

 private:
  Context::Impl& impl_;
};

/// While alive, every (op, shape class) the context's ops look up is added to `seen`.
class TuningCapture {
 public:
  TuningCapture(Context& ctx, std::set<std::pair<std::string, std::string>>& seen) : impl_(internals(ctx)) {
    impl_.tuning_capture = &seen;
  }
  ~TuningCapture() { impl_.tuning_capture = nullptr; }
  TuningCapture(const TuningCapture&) = delete;
  TuningCapture& operator=(const TuningCapture&) = delete;

 private:
  Context::Impl& impl_;
};

}  // namespace vkf
