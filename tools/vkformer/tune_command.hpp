// `vkformer tune`: measures each tunable op's candidate configurations (its
// descriptor's `candidates`) at the shapes a model runs or at given shapes,
// checks each against the CPU reference before timing it, and stores the ones
// that beat the engine's own choice in the device's tuning database.
#pragma once

#include <string>
#include <vector>

#include "model_commands.hpp"

namespace vkf::tools {

struct TuneOptions {
  std::vector<std::string> ops;     ///< ops to tune; empty: every tunable op
  std::vector<std::string> shapes;  ///< --shape texts; empty: each op's standard shapes
  ProfileOptions model;             ///< --model DIR (with --batch, --src-len, --tgt-len): its shapes instead
  double budget_s = 600;            ///< the whole search stops after this
  int repeat = 7;                   ///< timed runs per candidate (median)
  std::string db;                   ///< database file; empty: the context's (--tuning PATH, else the cache's)
};

/// Runs the search and writes the database; returns the exit code.
int run_tune(const ContextOptions& ctx_opts, const TuneOptions& o);

}  // namespace vkf::tools
