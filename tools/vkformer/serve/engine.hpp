// The served models and the one worker thread that runs them. HTTP handler
// threads queue jobs here and wait for their futures; the worker owns every
// Session, so the device sees one submission at a time. Embedding jobs that
// arrive within the batch window run together as one padded batch. Generation
// jobs join their model's DecodeBatch at the next step boundary and leave it
// when they finish (continuous batching); the worker interleaves prefills,
// embedding batches and decode steps.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/metrics.hpp"
#include "vkformer/context.hpp"
#include "vkformer/decode_batch.hpp"
#include "vkformer/model.hpp"
#include "vkformer/chat.hpp"
#include "vkformer/session.hpp"
#include "vkformer/model_dir.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::tools::serve {

/// One model directory, loaded once.
struct ServedModel {
  std::string name, dir;
  std::shared_ptr<Model> model;
  std::shared_ptr<const Tokenizer> tok;  ///< null: the directory has none (ids only)
  ModelInfo info;
  bool embeds = false, generates = false;
  uint32_t dim = 0;                ///< embedding width (embedding models)
  uint32_t max_tokens = 0;         ///< the longest input it takes; 0: no limit known
  GenerateOptions gen_defaults;    ///< generation_config.json over GenerateOptions' defaults
  std::optional<ChatTemplate> chat;  ///< tokenizer_config.json's chat template, when it has one
};

/// A request the queue refused (HTTP 503) or that ran into a lost device (503 too).
struct Unavailable : Error {
  using Error::Error;
};

struct EngineLimits {
  uint32_t max_queue = 64;      ///< queued requests beyond this are refused
  uint32_t max_batch = 32;      ///< sequences per embedding submission
  uint32_t batch_window_ms = 5; ///< how long the first embedding request waits for others
  uint32_t max_decode = 8;      ///< sequences per generation step (0: each request alone)
};

/// Called on the worker thread with (sequence, token) as each token is chosen;
/// returns false to stop that sequence (a stop string, a client gone).
using TokenSink = std::function<bool(uint32_t, int32_t)>;

class Engine {
 public:
  Engine(Context& ctx, EngineLimits limits, Metrics& metrics);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Loads DIR as NAME (before serving starts). @throws vkf::Error.
  /// `kv_cache`: the KV cache of its generations (its decode batch's and each alone).
  void add_model(const std::string& name, const std::string& dir, const std::string& precision,
                 KvCacheType kv_cache = KvCacheType::Auto);
  const ServedModel* find(const std::string& name) const;
  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }

  /// Embeddings [ids.size(), dim]. @throws Unavailable when the queue is full.
  std::future<EmbedOutput> embed(const ServedModel& m, std::vector<Ids> ids);
  /// Generated ids per prompt. `sink` may be empty. @throws Unavailable when the queue is full.
  std::future<std::vector<Ids>> generate(const ServedModel& m, std::vector<Ids> prompts, GenerateOptions o,
                                         TokenSink sink);

  /// false after a device loss: every request then fails with Unavailable.
  bool ready() const { return !lost_.load(); }
  /// Runs what is queued, then stops the worker (SIGTERM: nothing in flight is lost).
  void drain();

 private:
  struct Job;
  void work();
  void run_embeddings(std::vector<std::shared_ptr<Job>>& jobs);
  void run_generation(Job& job);
  void enqueue(std::shared_ptr<Job> job);
  /// Whether the job's sequences can join its model's batch (now or once there is room).
  bool joinable(const Job& job) const;
  /// Prefills the job's sequences into its model's batch.
  void join(const std::shared_ptr<Job>& job);
  /// One decode step of every batch with sequences; answers the jobs that finished.
  void step_batches();
  /// Hands finished sequences to their jobs.
  void collect(size_t model);
  /// Fails every job of model `m`'s batch (a device error) and empties it.
  void fail_batch(size_t m, std::exception_ptr e);
  bool decoding() const;

  Context& ctx_;
  EngineLimits limits_;
  Metrics& metrics_;
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::vector<std::unique_ptr<Session>> sessions_;  ///< one per model, used by the worker only
  std::vector<std::unique_ptr<DecodeBatch>> batches_;  ///< per model; null: it generates alone
  /// The job and choice index of each sequence in a batch, per model, by DecodeBatch id.
  std::vector<std::map<uint64_t, std::pair<std::shared_ptr<Job>, uint32_t>>> seqs_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::atomic<bool> lost_{false};
  std::thread worker_;
};

}  // namespace vkf::tools::serve
