#include "scheduling/rate_limiter.h"

#include <algorithm>
#include <utility>

namespace infernode {

void GrantTarget::Deliver(uint32_t instance, Grants* more) {
  std::lock_guard<std::mutex> lock(mu_);
  if (on_grant_) on_grant_(instance, more);
}

void GrantTarget::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  on_grant_ = nullptr;
}

void Grants::Deliver() {
  while (!grants_.empty()) {
    std::vector<std::pair<std::shared_ptr<GrantTarget>, uint32_t>> grants = std::move(grants_);
    grants_.clear();
    for (auto& [target, instance] : grants) target->Deliver(instance, this);
  }
}

RateLimiter::RateLimiter(ResourceCounts explicit_counts) : explicit_counts_(std::move(explicit_counts)) {}

RateLimiter::~RateLimiter() = default;

namespace {

ResourceCounts NeedsOf(const InstanceRateLimits& limits) {
  ResourceCounts needs;
  for (const RateLimitResource& r : limits.resources) {
    // A name listed twice: the last entry counts, as in Triton.
    needs[r.global ? kGlobalResourceDevice : limits.device][r.name] = r.count;
  }
  return needs;
}

uint64_t CountIn(const ResourceCounts& counts, int32_t device, const std::string& name) {
  auto d = counts.find(device);
  if (d == counts.end()) return 0;
  auto r = d->second.find(name);
  return r == d->second.end() ? 0 : r->second;
}

}  // namespace

Status RateLimiter::Register(const std::string& model, std::vector<InstanceRateLimits> instances, OnGrant on_grant,
                             std::unique_ptr<RateLimitRegistration>* out) {
  Model entry;
  entry.name = model;
  entry.target = std::make_shared<GrantTarget>(std::move(on_grant));
  for (const InstanceRateLimits& limits : instances) {
    Instance instance;
    instance.needs = NeedsOf(limits);
    instance.priority = std::max<uint32_t>(limits.priority, 1);
    entry.instances.push_back(std::move(instance));
  }
  std::shared_ptr<GrantTarget> target = entry.target;
  Grants grants;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_model_++;
    models_.emplace(id, std::move(entry));
    ResourceCounts available;
    Status status = ComputeAvailableLocked(&available);
    if (!status.IsOk()) {
      models_.erase(id);
      return InvalidArg("model '" + model + "': rate limiter: " + status.Message());
    }
    available_ = std::move(available);
    GrantLocked(&grants, nullptr);  // larger counts may let a waiting instance go
  }
  grants.Deliver();
  out->reset(new RateLimitRegistration(this, id, std::move(target)));
  return Status::Success();
}

// Triton's ResourceManager: the largest need per device and resource, checked against the
// explicit counts when there are any (a resource they do not name is then unavailable).
Status RateLimiter::ComputeAvailableLocked(ResourceCounts* available) const {
  ResourceCounts max_needs;
  for (const auto& [id, model] : models_) {
    for (const Instance& instance : model.instances) {
      for (const auto& [device, resources] : instance.needs) {
        for (const auto& [name, count] : resources) {
          uint64_t& max = max_needs[device][name];
          max = std::max(max, count);
        }
      }
    }
  }
  auto global = max_needs.find(kGlobalResourceDevice);
  if (global != max_needs.end()) {
    for (const auto& [name, count] : global->second) {
      for (const auto& [device, resources] : max_needs) {
        if (device != kGlobalResourceDevice && resources.count(name) != 0) {
          return InvalidArg("Resource \"" + name +
                            "\" is present as both global and device-specific resource in the model configuration.");
        }
      }
    }
  }
  if (explicit_counts_.empty()) {
    *available = std::move(max_needs);
    return Status::Success();
  }
  for (auto& [device, resources] : max_needs) {
    for (auto& [name, needed] : resources) {
      uint64_t limit = 0;
      if (device == kGlobalResourceDevice) {
        for (const auto& [explicit_device, counts] : explicit_counts_) {
          limit = std::max(limit, CountIn(explicit_counts_, explicit_device, name));
        }
      } else {
        limit = std::max(CountIn(explicit_counts_, device, name), CountIn(explicit_counts_, kEveryDevice, name));
      }
      if (limit < needed) {
        return InvalidArg(
            "Resource count for \"" + name + "\" is limited to " + std::to_string(limit) +
            " which will prevent scheduling of one or more model instances, the minimum required count is " +
            std::to_string(needed) + " (give it with --rate-limit-resource " + name + ":" + std::to_string(needed) +
            " or more)");
      }
      needed = limit;
    }
  }
  *available = std::move(max_needs);
  return Status::Success();
}

bool RateLimiter::FitsLocked(const Instance& instance) const {
  for (const auto& [device, resources] : instance.needs) {
    for (const auto& [name, count] : resources) {
      if (CountIn(allocated_, device, name) + count > CountIn(available_, device, name)) return false;
    }
  }
  return true;
}

void RateLimiter::AddLocked(const ResourceCounts& needs, int sign) {
  for (const auto& [device, resources] : needs) {
    for (const auto& [name, count] : resources) {
      uint64_t& held = allocated_[device][name];
      held = sign > 0 ? held + count : (held > count ? held - count : 0);
    }
  }
}

RateLimiter::Instance* RateLimiter::FirstWaitingLocked(uint64_t* model_id) {
  Instance* first = nullptr;
  uint64_t first_score = 0;
  for (auto& [id, model] : models_) {
    for (Instance& instance : model.instances) {
      if (!instance.waiting) continue;
      const uint64_t score = instance.executions * instance.priority;
      if (first == nullptr || score < first_score ||
          (score == first_score && instance.wait_order < first->wait_order)) {
        first = &instance;
        first_score = score;
        *model_id = id;
      }
    }
  }
  return first;
}

void RateLimiter::GrantLocked(Grants* grants, const Instance* requester) {
  for (;;) {
    uint64_t model_id = 0;
    Instance* first = FirstWaitingLocked(&model_id);
    if (first == nullptr || !FitsLocked(*first)) return;
    first->waiting = false;
    first->holding = true;
    AddLocked(first->needs, +1);
    if (first == requester) continue;  // its Request() answers true
    Model& model = models_.at(model_id);
    grants->grants_.emplace_back(model.target, static_cast<uint32_t>(first - model.instances.data()));
  }
}

bool RateLimiter::Request(uint64_t model_id, uint32_t instance_index, Grants* grants) {
  std::lock_guard<std::mutex> lock(mu_);
  auto model = models_.find(model_id);
  if (model == models_.end() || instance_index >= model->second.instances.size()) return true;
  Instance& instance = model->second.instances[instance_index];
  if (instance.holding) return true;
  if (!instance.waiting) {
    instance.waiting = true;
    instance.wait_order = next_wait_order_++;
  }
  GrantLocked(grants, &instance);
  return instance.holding;
}

void RateLimiter::Release(uint64_t model_id, uint32_t instance_index, Grants* grants) {
  std::lock_guard<std::mutex> lock(mu_);
  auto model = models_.find(model_id);
  if (model == models_.end() || instance_index >= model->second.instances.size()) return;
  Instance& instance = model->second.instances[instance_index];
  if (instance.holding) {
    instance.holding = false;
    ++instance.executions;
    AddLocked(instance.needs, -1);
  }
  instance.waiting = false;
  GrantLocked(grants, nullptr);
}

void RateLimiter::Unregister(uint64_t model_id, Grants* grants) {
  std::lock_guard<std::mutex> lock(mu_);
  auto model = models_.find(model_id);
  if (model == models_.end()) return;
  for (const Instance& instance : model->second.instances) {
    if (instance.holding) AddLocked(instance.needs, -1);
  }
  models_.erase(model);
  ResourceCounts available;
  // Removing instances cannot make the rest invalid; the counts may only shrink.
  if (ComputeAvailableLocked(&available).IsOk()) available_ = std::move(available);
  GrantLocked(grants, nullptr);
}

ResourceCounts RateLimiter::Available() const {
  std::lock_guard<std::mutex> lock(mu_);
  return available_;
}

RateLimitRegistration::~RateLimitRegistration() {
  Grants grants;
  limiter_->Unregister(model_, &grants);
  target_->Detach();
  grants.Deliver();
}

}  // namespace infernode
