#include "serve/engine.hpp"

#include <algorithm>

#include "model_commands.hpp"

namespace vkf::tools::serve {
namespace {

using Clock = std::chrono::steady_clock;

/// Rows (prompt + new tokens) of a decode batch's slots: its caches take
/// slots × rows × 2·d_model values per layer (GPT-2 small, 8 slots: 151 MB in
/// fp32, half with --kv-cache f16). A longer request runs alone.
constexpr uint32_t kDecodeRows = 256;

const char* const kLost = "the device was lost; this server can no longer run models";

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

struct Engine::Job {
  const ServedModel* model = nullptr;
  size_t index = 0;  ///< the model's session
  bool generate = false;
  std::vector<Ids> ids;
  GenerateOptions options;
  TokenSink sink;
  Clock::time_point queued = Clock::now();
  std::promise<EmbedOutput> embedded;
  std::promise<std::vector<Ids>> generated;
  // In a decode batch: each choice's tokens, how many are still decoding.
  std::vector<Ids> results;
  size_t pending = 0;
  bool failed = false;  ///< answered with an error; its other sequences stop

  void fail(std::exception_ptr e) {
    failed = true;
    if (generate) generated.set_exception(e);
    else embedded.set_exception(e);
  }
};

Engine::Engine(Context& ctx, EngineLimits limits, Metrics& metrics)
    : ctx_(ctx), limits_(limits), metrics_(metrics), worker_([this] { work(); }) {}

Engine::~Engine() { drain(); }

void Engine::add_model(const std::string& name, const std::string& dir, const std::string& precision,
                       KvCacheType kv_cache) {
  if (find(name)) throw Error("--model " + name + "=" + dir + ": the name \"" + name + "\" is taken");
  auto m = std::make_unique<ServedModel>();
  m->name = name;
  m->dir = dir;
  const ModelDir files = ModelDir::open(dir);  // before the weights: a bad file fails fast
  m->tok = files.tokenizer();
  m->gen_defaults = files.generation();
  // A broken chat template fails here, at start, not on the first chat request.
  if (m->tok && ChatTemplate::present(dir)) m->chat = ChatTemplate::load(dir, m->tok);
  m->gen_defaults.kv_cache = kv_cache;
  m->model = load_model(ctx_, dir, precision);
  m->info = m->model->info();
  m->embeds = m->model->supports(Task::Embed);
  m->generates = m->model->supports(Task::Generate) && m->model->config().out_vocab() > 0;
  if (m->embeds) m->dim = m->model->output_dim();
  m->max_tokens = m->info.max_tokens ? m->info.max_tokens : m->model->config().max_positions;
  if (m->info.max_seq_length) m->max_tokens = std::min(m->max_tokens, m->info.max_seq_length);
  sessions_.push_back(std::make_unique<Session>(m->model));
  batches_.push_back(m->generates && limits_.max_decode > 0
                         ? DecodeBatch::make(*sessions_.back(), limits_.max_decode, kDecodeRows, kv_cache)
                         : nullptr);
  seqs_.emplace_back();
  models_.push_back(std::move(m));
}

const ServedModel* Engine::find(const std::string& name) const {
  for (const auto& m : models_)
    if (m->name == name) return m.get();
  return nullptr;
}

void Engine::enqueue(std::shared_ptr<Job> job) {
  if (!ready()) throw Unavailable(kLost);
  for (size_t i = 0; i < models_.size(); ++i)
    if (models_[i].get() == job->model) job->index = i;
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) throw Unavailable("the server is shutting down");
  if (queue_.size() >= limits_.max_queue)
    throw Unavailable("the queue is full (" + std::to_string(limits_.max_queue) + " requests, --max-queue)");
  queue_.push_back(std::move(job));
  metrics_.queue_depth(queue_.size());
  cv_.notify_all();
}

std::future<EmbedOutput> Engine::embed(const ServedModel& m, std::vector<Ids> ids) {
  auto job = std::make_shared<Job>();
  job->model = &m;
  job->ids = std::move(ids);
  auto f = job->embedded.get_future();
  enqueue(std::move(job));
  return f;
}

std::future<std::vector<Ids>> Engine::generate(const ServedModel& m, std::vector<Ids> prompts, GenerateOptions o,
                                               TokenSink sink) {
  auto job = std::make_shared<Job>();
  job->model = &m;
  job->generate = true;
  job->ids = std::move(prompts);
  job->options = std::move(o);
  job->sink = std::move(sink);
  auto f = job->generated.get_future();
  enqueue(std::move(job));
  return f;
}

void Engine::drain() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

bool Engine::decoding() const {
  for (const auto& b : batches_)
    if (b && b->size() > 0) return true;
  return false;
}

bool Engine::joinable(const Job& job) const {
  const DecodeBatch* b = batches_[job.index].get();
  if (!job.generate || !b || job.ids.size() > limits_.max_decode) return false;
  for (const Ids& p : job.ids)
    if (!b->fits(p, job.options)) return false;
  return true;
}

void Engine::work() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stopping_ || !queue_.empty() || decoding(); });
    if (queue_.empty() && !decoding()) return;  // stopping, and everything queued has run
    // Generation jobs join their model's batch while it has room, oldest first.
    std::vector<std::shared_ptr<Job>> joining;
    std::vector<size_t> taken(batches_.size(), 0);
    for (auto it = queue_.begin(); it != queue_.end();) {
      Job& j = **it;
      if (joinable(j) && batches_[j.index]->size() + taken[j.index] + j.ids.size() <= limits_.max_decode) {
        taken[j.index] += j.ids.size();
        joining.push_back(*it);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    // Else the oldest job that does not wait for room in a batch: embeddings, or a generation that runs alone.
    std::vector<std::shared_ptr<Job>> jobs;
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (!joinable(**it)) {
        jobs.push_back(*it);
        queue_.erase(it);
        break;
      }
    if (!jobs.empty() && !jobs[0]->generate) {
      // Embedding requests for the same model that arrive within the window join
      // this batch, up to max_batch sequences. Decoding sequences do not wait for it.
      const auto deadline = Clock::now() + std::chrono::milliseconds(decoding() ? 0 : limits_.batch_window_ms);
      size_t n = jobs[0]->ids.size();
      for (;;) {
        for (auto it = queue_.begin(); it != queue_.end() && n < limits_.max_batch;) {
          if (!(*it)->generate && (*it)->model == jobs[0]->model && n + (*it)->ids.size() <= limits_.max_batch) {
            n += (*it)->ids.size();
            jobs.push_back(*it);
            it = queue_.erase(it);
          } else {
            ++it;
          }
        }
        if (n >= limits_.max_batch || stopping_ ||
            cv_.wait_until(l, deadline) == std::cv_status::timeout)
          break;
      }
    }
    metrics_.queue_depth(queue_.size());
    l.unlock();
    for (auto& j : joining) metrics_.queued(seconds_since(j->queued));
    for (auto& j : jobs) metrics_.queued(seconds_since(j->queued));
    for (auto& j : joining) join(j);
    if (!jobs.empty() && jobs[0]->generate) run_generation(*jobs[0]);
    else if (!jobs.empty()) run_embeddings(jobs);
    step_batches();
    l.lock();
  }
}

void Engine::join(const std::shared_ptr<Job>& job) {
  const size_t m = job->index;
  DecodeBatch& batch = *batches_[m];
  job->results.assign(job->ids.size(), {});
  job->pending = job->ids.size();
  try {
    if (!ready()) throw Unavailable(kLost);
    for (uint32_t b = 0; b < job->ids.size(); ++b) {
      // Choice b as source b of a generate call alone: seed + b, tokens to the sink as b.
      GenerateOptions o = job->options;
      o.seed += b;
      Job* j = job.get();
      o.on_token = [j, b](uint32_t, int32_t token) { return !j->failed && (!j->sink || j->sink(b, token)); };
      seqs_[m][batch.add(job->ids[b], o)] = {job, b};
      if (job->failed) break;
    }
  } catch (...) {
    if (ctx_.device_lost()) {
      fail_batch(m, std::make_exception_ptr(Unavailable(kLost)));
      if (!job->failed) job->fail(std::make_exception_ptr(Unavailable(kLost)));
      return;
    }
    job->fail(std::current_exception());  // its sequences already in the batch stop at their next token
  }
  collect(m);
}

void Engine::step_batches() {
  for (size_t m = 0; m < batches_.size(); ++m) {
    DecodeBatch* batch = batches_[m].get();
    if (!batch || batch->size() == 0) continue;
    const uint32_t live = uint32_t(batch->size());
    const auto t0 = Clock::now();
    try {
      if (!ready()) throw Unavailable(kLost);
      batch->step();
    } catch (...) {
      fail_batch(m, ctx_.device_lost() ? std::make_exception_ptr(Unavailable(kLost)) : std::current_exception());
      continue;
    }
    const double secs = seconds_since(t0);
    metrics_.batch("decode_step", live);
    metrics_.device("decode_step", secs);
    if (secs > 0) metrics_.generation_speed(live / secs);
    collect(m);
  }
}

void Engine::collect(size_t m) {
  for (auto& [id, tokens] : batches_[m]->take_finished()) {
    auto it = seqs_[m].find(id);
    auto [job, b] = it->second;
    seqs_[m].erase(it);
    metrics_.tokens("completion", tokens.size());
    job->results[b] = std::move(tokens);
    if (--job->pending > 0 || job->failed) continue;
    uint64_t read = 0;
    for (const Ids& p : job->ids) read += p.size();
    metrics_.tokens("prompt", read);
    job->generated.set_value(std::move(job->results));
  }
}

void Engine::fail_batch(size_t m, std::exception_ptr e) {
  if (ctx_.device_lost()) lost_ = true;
  for (auto& [id, seq] : seqs_[m])
    if (!seq.first->failed) seq.first->fail(e);
  seqs_[m].clear();
  batches_[m]->clear();
}

void Engine::run_embeddings(std::vector<std::shared_ptr<Job>>& jobs) {
  Session& s = *sessions_[jobs[0]->index];
  std::vector<Ids> all;
  for (auto& j : jobs) all.insert(all.end(), j->ids.begin(), j->ids.end());
  const auto t0 = Clock::now();
  EmbedOutput out;
  try {
    if (!ready()) throw Unavailable(kLost);
    // A request longer than max_batch runs in several submissions.
    for (size_t b0 = 0; b0 < all.size(); b0 += limits_.max_batch) {
      const size_t b1 = std::min(all.size(), b0 + limits_.max_batch);
      EmbedOutput part = s.embed({all.begin() + std::ptrdiff_t(b0), all.begin() + std::ptrdiff_t(b1)});
      metrics_.batch("embedding", uint32_t(b1 - b0));
      out.dim = part.dim;
      out.lengths.insert(out.lengths.end(), part.lengths.begin(), part.lengths.end());
      out.data.insert(out.data.end(), part.data.begin(), part.data.end());
    }
  } catch (...) {
    if (ctx_.device_lost()) lost_ = true;
    for (auto& j : jobs) j->fail(ctx_.device_lost() ? std::make_exception_ptr(Unavailable(kLost)) : std::current_exception());
    return;
  }
  metrics_.device("embedding", seconds_since(t0));
  size_t row = 0;
  for (auto& j : jobs) {
    EmbedOutput mine;
    mine.batch = uint32_t(j->ids.size());
    mine.dim = out.dim;
    mine.lengths.assign(out.lengths.begin() + std::ptrdiff_t(row), out.lengths.begin() + std::ptrdiff_t(row + mine.batch));
    mine.data.assign(out.data.begin() + std::ptrdiff_t(row * out.dim),
                     out.data.begin() + std::ptrdiff_t((row + mine.batch) * out.dim));
    row += mine.batch;
    uint64_t tokens = 0;
    for (uint32_t len : mine.lengths) tokens += len;
    metrics_.tokens("prompt", tokens);
    j->embedded.set_value(std::move(mine));
  }
}

void Engine::run_generation(Job& job) {
  Session& s = *sessions_[job.index];
  const auto t0 = Clock::now();
  try {
    if (!ready()) throw Unavailable(kLost);
    if (job.sink) job.options.on_token = job.sink;
    std::vector<Ids> out = s.generate(job.ids, job.options);
    const double secs = seconds_since(t0);
    uint64_t made = 0, read = 0;
    for (const Ids& o : out) made += o.size();
    for (const Ids& p : job.ids) read += p.size();
    metrics_.batch("generation", uint32_t(job.ids.size()));
    metrics_.device("generation", secs);
    metrics_.tokens("prompt", read);
    metrics_.tokens("completion", made);
    if (secs > 0) metrics_.generation_speed(double(made) / secs);
    job.generated.set_value(std::move(out));
  } catch (...) {
    if (ctx_.device_lost()) lost_ = true;
    job.fail(ctx_.device_lost() ? std::make_exception_ptr(Unavailable(kLost)) : std::current_exception());
  }
}

}  // namespace vkf::tools::serve
