// GET /metrics: counters and histograms in Prometheus' text format (0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace vkf::tools::serve {

class Metrics {
 public:
  /// A finished HTTP request: its route ("/v1/embeddings", ...) and status code.
  void request(const std::string& route, int status);
  /// Sequences run in one embedding submission, or generated together.
  void batch(const char* kind, uint32_t sequences);
  /// Seconds a job waited in the queue, and seconds the device took for it.
  void queued(double seconds);
  void device(const char* kind, double seconds);
  /// Tokens read ("prompt") or generated ("completion").
  void tokens(const char* kind, uint64_t n);
  /// Tokens per second of the last generation batch.
  void generation_speed(double tokens_per_second);
  void queue_depth(size_t n);

  std::string render(bool ready) const;

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  ///< one per bound, cumulative at render
    uint64_t count = 0;
    double sum = 0;
    void add(double v);
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> batches_, device_;
  Histogram queued_;
  std::map<std::string, uint64_t> tokens_;
  double speed_ = 0;
  size_t depth_ = 0;
};

}  // namespace vkf::tools::serve
