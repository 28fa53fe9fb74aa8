// `vkformer serve`: the models of one process behind HTTP — OpenAI's
// /v1/embeddings, /v1/completions and /v1/models, the Open Inference Protocol
// v2 (KServe), /health and Prometheus /metrics (docs/serving.md).
#pragma once

#include <string>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf::tools {

/// The most handler threads `--threads` may ask for: more requests at once than
/// this only queue for the one device worker anyway.
constexpr unsigned kMaxHttpThreads = 256;

struct ServeOptions {
  std::vector<std::string> models;  ///< DIR or NAME=DIR (the name defaults to the directory's)
  std::string host = "127.0.0.1", precision = "fp32", api_key;
  std::string kv_cache = "auto";    ///< --kv-cache: auto, f32 or f16
  int port = 8080;                  ///< 0: any free port (printed at start)
  unsigned threads = 16;            ///< requests handled at once (1..kMaxHttpThreads); I/O is asynchronous
  unsigned max_queue = 64, max_batch = 32, batch_window_ms = 5;
  unsigned max_decode_batch = 8;    ///< sequences decoded together (0: each generation alone)
  unsigned max_body_kb = 1024;      ///< request bodies above this get 413
  unsigned max_inputs = 256;        ///< texts per request
  unsigned max_tokens = 512;        ///< generated tokens per request
  unsigned timeout_s = 600;         ///< a request still waiting after this gets 504
  /// A request's line, headers and body must arrive within this (408), and an idle
  /// kept-alive connection closes after it.
  double request_timeout_s = 10;
  unsigned max_connections = 512;   ///< connections open at once; beyond: 503 and close
};

/// Serves until SIGTERM or SIGINT, then finishes what is in flight and returns 0.
int run_serve(const ContextOptions& ctx_opts, const ServeOptions& o);

}  // namespace vkf::tools
