#include "serve/engine.hpp"

#include <algorithm>
#include <filesystem>

#include "model_commands.hpp"

namespace vkf::tools::serve {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::unique_ptr<Tokenizer> optional_tokenizer(const std::string& dir) {
  std::error_code ec;
  for (const char* f : {"tokenizer.json", "vocab.txt", "vocab.json", "tokenizer_config.json"})
    if (std::filesystem::exists(std::filesystem::path(dir) / f, ec)) return Tokenizer::load(dir);
  try {  // formats of the project's own families (use_lite's vocabulary, the char tokenizer)
    return Tokenizer::load(dir);
  } catch (const Error&) {
    return nullptr;
  }
}

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

  void fail(std::exception_ptr e) {
    if (generate) generated.set_exception(e);
    else embedded.set_exception(e);
  }
};

Engine::Engine(Context& ctx, EngineLimits limits, Metrics& metrics)
    : ctx_(ctx), limits_(limits), metrics_(metrics), worker_([this] { work(); }) {}

Engine::~Engine() { drain(); }

void Engine::add_model(const std::string& name, const std::string& dir, const std::string& precision) {
  if (find(name)) throw Error("--model " + name + "=" + dir + ": the name \"" + name + "\" is taken");
  auto m = std::make_unique<ServedModel>();
  m->name = name;
  m->dir = dir;
  m->tok = optional_tokenizer(dir);  // before the device: a bad tokenizer fails fast
  m->gen_defaults = read_generation_config(dir, GenerateOptions{});
  m->model = load_model(ctx_, dir, precision);
  m->info = m->model->info();
  m->embeds = m->model->supports(Task::Embed);
  m->generates = m->model->supports(Task::Generate) && m->model->config().out_vocab() > 0;
  if (m->embeds) m->dim = m->model->output_dim();
  m->max_tokens = m->info.max_tokens ? m->info.max_tokens : m->model->config().max_positions;
  if (m->info.max_seq_length) m->max_tokens = std::min(m->max_tokens, m->info.max_seq_length);
  sessions_.push_back(std::make_unique<Session>(m->model));
  models_.push_back(std::move(m));
}

const ServedModel* Engine::find(const std::string& name) const {
  for (const auto& m : models_)
    if (m->name == name) return m.get();
  return nullptr;
}

void Engine::enqueue(std::shared_ptr<Job> job) {
  if (!ready()) throw Unavailable("the device was lost; this server can no longer run models");
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

void Engine::work() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::vector<std::shared_ptr<Job>> jobs{queue_.front()};
    queue_.pop_front();
    if (!jobs[0]->generate) {
      // Embedding requests for the same model that arrive within the window join
      // this batch, up to max_batch sequences.
      const auto deadline = Clock::now() + std::chrono::milliseconds(limits_.batch_window_ms);
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
    for (auto& j : jobs) metrics_.queued(seconds_since(j->queued));
    if (jobs[0]->generate) run_generation(*jobs[0]);
    else run_embeddings(jobs);
    l.lock();
  }
}

void Engine::run_embeddings(std::vector<std::shared_ptr<Job>>& jobs) {
  Session& s = *sessions_[jobs[0]->index];
  std::vector<Ids> all;
  for (auto& j : jobs) all.insert(all.end(), j->ids.begin(), j->ids.end());
  const auto t0 = Clock::now();
  EmbedOutput out;
  try {
    if (!ready()) throw Unavailable("the device was lost; this server can no longer run models");
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
    for (auto& j : jobs) j->fail(ctx_.device_lost() ? std::make_exception_ptr(Unavailable(
                                                          "the device was lost; this server can no longer run models"))
                                                    : std::current_exception());
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
    if (!ready()) throw Unavailable("the device was lost; this server can no longer run models");
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
    job.fail(ctx_.device_lost()
                 ? std::make_exception_ptr(Unavailable("the device was lost; this server can no longer run models"))
                 : std::current_exception());
  }
}

}  // namespace vkf::tools::serve
