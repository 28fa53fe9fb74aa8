// Tuned kernel configurations (`vkformer tune`): per device, per op and per
// shape class, the variant and specialization constants measured fastest, kept
// in a JSON database. The engine consults it before its own rules; see
// docs/tuning.md for the file format and the keys.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf {

/// One configuration of an op: a variant and the knobs (specialization
/// constants, by the names its descriptor lists) that differ from the
/// engine's own choice. Knobs not named keep the engine's value.
struct TunedConfig {
  std::string variant;  ///< "" keeps the engine's variant
  std::vector<std::pair<std::string, uint32_t>> knobs;
  double ms = 0;          ///< measured median (database entries)
  double default_ms = 0;  ///< the engine's own choice, measured in the same run
  /// Its output's error against the op's reference, when it was checked (by
  /// `tune`, or at its first use in a context); < 0: not checked yet. An entry
  /// is checked once: a database entry that misses its op's bound is never used.
  double checked_error = -1;
  double checked_bound = 0;  ///< the op's bound at that check
  /// The knob's value, or `fallback` when the configuration does not set it.
  uint32_t knob(const std::string& name, uint32_t fallback) const;
  bool has(const std::string& name) const;
  /// "blocked BM=64 BN=32" (variant then knobs), as tables and logs show it.
  std::string text() const;
};

/// What identifies a device's tuning: results carry over only to the same
/// vendor, device, driver, driver version and pipeline-cache UUID (and, on
/// lavapipe, the same LP_NATIVE_VECTOR_WIDTH, which changes its code).
std::string tuning_device_key(const Capabilities& caps);

/// lavapipe's LP_NATIVE_VECTOR_WIDTH when it is set and the device is
/// llvmpipe, else "". Measured on 2 AVX-512 cores (docs/performance.md): 512
/// runs large GEMMs ~10 % faster than the default 256 but GEMV, LayerNorm and
/// softmax 1.3–2.3× slower, so the default stays.
std::string lavapipe_vector_width(const Capabilities& caps);

/// The tuning database of one device, read from a file.
struct TuningTable {
  std::string path;     ///< the file read ("" when tuning is off)
  std::string warning;  ///< why a file that exists was ignored ("" when it was read)
  /// Entries left out because they require a subgroup size (knob SGS) this
  /// device cannot require: the same GPU created without subgroup size
  /// control (a host application's device) shares the tuned one's key.
  size_t skipped_sgs = 0;
  /// op → shape class → best configuration.
  std::map<std::string, std::map<std::string, TunedConfig>> best;
  /// op → shape class → configurations that failed (wrong output, device lost).
  std::map<std::string, std::map<std::string, std::vector<std::string>>> unusable;
  size_t size() const;
  const TunedConfig* find(const std::string& op, const std::string& shape_class) const;
};

/// Reads `caps`'s entries from `path`. A missing file is an empty table; a
/// damaged one is an empty table with `warning` set (never an exception).
TuningTable load_tuning(const std::string& path, const Capabilities& caps);

/// @throws vkf::Error when something other than a regular file is at `path`
/// (a symlink, a device, a directory), which storing would replace.
void check_tuning_file(const std::string& path);

/// Merges `results` (this device's) into the file at `path`: re-reads it,
/// replaces the entries it measured again, writes a temporary file and renames
/// it over, so two processes tuning at once lose at most a result.
/// @throws vkf::Error when the file cannot be written.
void store_tuning(const std::string& path, const Capabilities& caps, const TuningTable& results);

/// The database a context uses (empty, with an empty path, when tuning is off).
const TuningTable& tuning_table(const Context& ctx);
/// The file a tuning choice ("auto", "off" or a path) means for this context:
/// "auto" is tuning.json in the pipeline cache's directory; "" when off.
std::string tuning_file(const Context& ctx, const std::string& choice);

}  // namespace vkf
