// Triton's rate limiter (--rate-limit execution_count): one per Triton, shared by the schedulers
// of all its models. An instance executes a batch only once the resources its instance group
// lists (`rate_limiter { resources [...] priority }`) are available on its device (or
// globally); they are held for the execution and released when the instance reports it done.
//
// Availability per resource: the `--rate-limit-resource` count when given (for a device, or for
// every device), else the most any registered instance asks for (Triton's ResourceManager).
// Waiting instances are granted in order of Triton's scaled priority, executions × priority
// (priority 0 counts as 1, so priority N gets 1/N of the chances of priority 1), FIFO among
// equal scores. Only the first waiting instance is tried, as in Triton: one whose resources are
// not free holds back those behind it, so an instance asking for much is never starved by ones
// asking for little, and every score grows with its executions, so no instance waits forever.
//
// Threads: every method may be called from any thread; all state is guarded by mu_. A grant
// (an instance that waited may now execute) is never delivered under mu_ or under the caller's
// locks: methods that may grant collect the grants in a `Grants`, which the caller delivers
// after it released its own lock (a scheduler's mutex). Lock order: a model's GrantTarget →
// its scheduler's mutex → the limiter's mutex; no thread takes a lock of one model while it
// holds a lock of another, so models sharing the limiter cannot deadlock each other.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "core/status.h"

namespace infernode {

// Device keys of resource counts: a global resource, and an explicit count for every device.
constexpr int32_t kGlobalResourceDevice = -2;
constexpr int32_t kEveryDevice = -1;

// device (or kGlobalResourceDevice / kEveryDevice) → resource name → count.
using ResourceCounts = std::map<int32_t, std::map<std::string, uint64_t>>;

class Grants;

// Called when `instance` of a model may execute now; grants it causes in turn go to `more`.
using OnGrant = std::function<void(uint32_t instance, Grants* more)>;

// Where a model's grants arrive. Shared between the limiter and the model's registration, so a
// grant collected before the model unregistered and delivered after reaches nobody instead of
// a freed scheduler.
class GrantTarget {
 public:
  explicit GrantTarget(OnGrant on_grant) : on_grant_(std::move(on_grant)) {}
  // Calls on_grant with mu_ held (Detach waits for it); what on_grant grants in turn (giving
  // a grant back) goes to `more`, delivered by the caller's loop, not nested.
  void Deliver(uint32_t instance, Grants* more);
  // After it returns no grant reaches on_grant (waits for one being delivered).
  void Detach();

 private:
  std::mutex mu_;
  OnGrant on_grant_;
};

// Grants collected under the limiter's lock; the collector delivers them once it holds no lock.
class Grants {
 public:
  Grants() = default;
  Grants(const Grants&) = delete;
  Grants& operator=(const Grants&) = delete;
  void Deliver();
  bool Empty() const { return grants_.empty(); }

 private:
  friend class RateLimiter;
  std::vector<std::pair<std::shared_ptr<GrantTarget>, uint32_t>> grants_;
};

class RateLimitRegistration;

class RateLimiter {
 public:
  // `explicit_counts`: the --rate-limit-resource values (empty: every count is the largest any
  // instance asks for).
  explicit RateLimiter(ResourceCounts explicit_counts);
  ~RateLimiter();
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Registers the instances of model `model` (grants go to `on_grant`). INVALID_ARG, and nothing
  // registered, when a resource would be both global and per device, or an explicit count is
  // below what an instance asks for (Triton's load errors). The limiter must outlive `out`.
  Status Register(const std::string& model, std::vector<InstanceRateLimits> instances, OnGrant on_grant,
                  std::unique_ptr<RateLimitRegistration>* out);

  // The resource counts available now (for tests and logs): device → name → count.
  ResourceCounts Available() const;

 private:
  friend class RateLimitRegistration;

  struct Instance {
    ResourceCounts needs;  // device key → name → count
    uint32_t priority = 1;
    uint64_t executions = 0;
    bool waiting = false;
    bool holding = false;
    uint64_t wait_order = 0;  // FIFO among equal scores
  };
  struct Model {
    std::string name;
    std::vector<Instance> instances;
    std::shared_ptr<GrantTarget> target;
  };

  // True when `instance` of `model` may execute now (and then holds its resources); else it
  // waits and its model's target gets the grant later. `grants`: others granted meanwhile.
  bool Request(uint64_t model, uint32_t instance, Grants* grants);
  void Release(uint64_t model, uint32_t instance, Grants* grants);
  void Unregister(uint64_t model, Grants* grants);

  Status ComputeAvailableLocked(ResourceCounts* available) const;
  bool FitsLocked(const Instance& instance) const;
  void AddLocked(const ResourceCounts& needs, int sign);
  // Grants waiting instances in order while the first one's resources are free.
  void GrantLocked(Grants* grants, const Instance* requester);
  Instance* FirstWaitingLocked(uint64_t* model);

  const ResourceCounts explicit_counts_;
  mutable std::mutex mu_;
  std::map<uint64_t, Model> models_;
  ResourceCounts available_;
  ResourceCounts allocated_;
  uint64_t next_model_ = 1;
  uint64_t next_wait_order_ = 0;
};

// One model's instances in the limiter; unregistering (on destruction) drops its waiting
// instances, frees what it holds and may grant other models' instances (delivered then, with no
// lock held: destroy it outside the scheduler's lock). After destruction no grant reaches it.
class RateLimitRegistration {
 public:
  ~RateLimitRegistration();
  RateLimitRegistration(const RateLimitRegistration&) = delete;
  RateLimitRegistration& operator=(const RateLimitRegistration&) = delete;

  // True when `instance` may execute now (it then holds its resources until Release); false
  // when it waits: its grant comes later through the on_grant given at registration. Other
  // instances granted meanwhile are added to `grants` (for the caller to deliver unlocked).
  bool Request(uint32_t instance, Grants* grants) { return limiter_->Request(model_, instance, grants); }
  // `instance` finished its execution (or gives back a grant it cannot use).
  void Release(uint32_t instance, Grants* grants) { limiter_->Release(model_, instance, grants); }

 private:
  friend class RateLimiter;
  RateLimitRegistration(RateLimiter* limiter, uint64_t model, std::shared_ptr<GrantTarget> target)
      : limiter_(limiter), model_(model), target_(std::move(target)) {}
  RateLimiter* const limiter_;
  const uint64_t model_;
  const std::shared_ptr<GrantTarget> target_;
};

}  // namespace infernode
