#include "serve/metrics.hpp"

#include <cstdio>

namespace vkf::tools::serve {
namespace {

std::string num(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128};
const std::vector<double> kSecondBounds = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30};

}  // namespace

void Metrics::Histogram::add(double v) {
  if (counts.size() != bounds.size()) counts.assign(bounds.size(), 0);
  for (size_t i = 0; i < bounds.size(); ++i)
    if (v <= bounds[i]) ++counts[i];
  ++count;
  sum += v;
}

void Metrics::request(const std::string& route, int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[{route, status}];
}

void Metrics::batch(const char* kind, uint32_t sequences) {
  std::lock_guard<std::mutex> l(mu_);
  auto [it, fresh] = batches_.try_emplace(kind);
  if (fresh) it->second.bounds = kBatchBounds;
  it->second.add(sequences);
}

void Metrics::queued(double seconds) {
  std::lock_guard<std::mutex> l(mu_);
  if (queued_.bounds.empty()) queued_.bounds = kSecondBounds;
  queued_.add(seconds);
}

void Metrics::device(const char* kind, double seconds) {
  std::lock_guard<std::mutex> l(mu_);
  auto [it, fresh] = device_.try_emplace(kind);
  if (fresh) it->second.bounds = kSecondBounds;
  it->second.add(seconds);
}

void Metrics::tokens(const char* kind, uint64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  tokens_[kind] += n;
}

void Metrics::generation_speed(double tokens_per_second) {
  std::lock_guard<std::mutex> l(mu_);
  speed_ = tokens_per_second;
}

void Metrics::queue_depth(size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  depth_ = n;
}

std::string Metrics::render(bool ready) const {
  std::lock_guard<std::mutex> l(mu_);
  std::string o;
  auto head = [&](const char* name, const char* type, const char* help) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto histogram = [&](const std::string& name, const std::string& labels, const Histogram& h) {
    const std::string sep = labels.empty() ? "" : labels + ",";
    for (size_t i = 0; i < h.bounds.size(); ++i)
      o += name + "_bucket{" + sep + "le=\"" + num(h.bounds[i]) + "\"} " +
           std::to_string(i < h.counts.size() ? h.counts[i] : 0) + "\n";
    o += name + "_bucket{" + sep + "le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    o += name + "_sum" + (labels.empty() ? "" : "{" + labels + "}") + " " + num(h.sum) + "\n";
    o += name + "_count" + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(h.count) + "\n";
  };
  head("vkformer_requests_total", "counter", "HTTP requests by route and status code.");
  for (const auto& [k, n] : requests_)
    o += "vkformer_requests_total{route=\"" + k.first + "\",code=\"" + std::to_string(k.second) + "\"} " +
         std::to_string(n) + "\n";
  head("vkformer_request_errors_total", "counter", "HTTP requests answered with a 4xx or 5xx status.");
  uint64_t errors = 0;
  for (const auto& [k, n] : requests_) errors += k.second >= 400 ? n : 0;
  o += "vkformer_request_errors_total " + std::to_string(errors) + "\n";
  head("vkformer_batch_size", "histogram",
       "Sequences per device batch: embedding (one submission), decode_step (a token each), generation (alone).");
  for (const auto& [kind, h] : batches_) histogram("vkformer_batch_size", "kind=\"" + kind + "\"", h);
  head("vkformer_queue_seconds", "histogram", "Time a request waited before the device started on it.");
  histogram("vkformer_queue_seconds", "", queued_);
  head("vkformer_device_seconds", "histogram", "Time the device took per batch.");
  for (const auto& [kind, h] : device_) histogram("vkformer_device_seconds", "kind=\"" + kind + "\"", h);
  head("vkformer_tokens_total", "counter", "Tokens read (prompt) and generated (completion).");
  for (const auto& [kind, n] : tokens_) o += "vkformer_tokens_total{kind=\"" + kind + "\"} " + std::to_string(n) + "\n";
  head("vkformer_generation_tokens_per_second", "gauge",
       "Generated tokens per second of the last decode step (all its sequences) or request run alone.");
  o += "vkformer_generation_tokens_per_second " + num(speed_) + "\n";
  head("vkformer_queue_depth", "gauge", "Requests waiting for the device.");
  o += "vkformer_queue_depth " + std::to_string(depth_) + "\n";
  head("vkformer_ready", "gauge", "1 while the device serves; 0 after a device loss.");
  o += std::string("vkformer_ready ") + (ready ? "1" : "0") + "\n";
  return o;
}

}  // namespace vkf::tools::serve
