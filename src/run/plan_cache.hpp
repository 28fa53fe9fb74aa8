// A Session's plans, by shape: buffers and recorded command buffers are kept
// for the shapes in use, and the least recently used one is dropped (its
// device memory freed) when a new shape would go past the capacity.
#pragma once

#include <list>
#include <memory>
#include <utility>

#include "model/family.hpp"

namespace vkf {

class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}

  /// The plan for `key`, now the most recently used; on a miss, make() makes
  /// it, after the least recently used plan is dropped if the cache is full.
  template <class Make>
  Plan& get(const PlanKey& key, Make&& make) {
    for (auto it = plans_.begin(); it != plans_.end(); ++it)
      if (it->first == key) {
        plans_.splice(plans_.begin(), plans_, it);
        return *it->second;
      }
    if (plans_.size() >= capacity_) plans_.pop_back();
    plans_.emplace_front(key, make());
    return *plans_.front().second;
  }
  bool contains(const PlanKey& key) const {
    for (const auto& e : plans_)
      if (e.first == key) return true;
    return false;
  }
  size_t size() const { return plans_.size(); }
  void clear() { plans_.clear(); }

 private:
  size_t capacity_;
  std::list<std::pair<PlanKey, std::unique_ptr<Plan>>> plans_;  ///< most recently used first
};

}  // namespace vkf
