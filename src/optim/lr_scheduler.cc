// Learning-rate schedulers (torch.optim.lr_scheduler): StepLR, LinearLR, CosineAnnealingLR and
// SequentialLR, with PyTorch's recursive ("chainable") updates and closed forms.
#include <kiln/optim.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "ops/dispatch.h"

namespace kiln::optim {

// ------------------------------------------------------------------------------ base
LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(&optimizer) {
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) {
    if (!optimizer.initial_lr(g)) optimizer.set_initial_lr(g, optimizer.lr(g));
    base_lrs_.push_back(*optimizer.initial_lr(g));
  }
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  KILN_CHECK(optimizer_->num_param_groups() == base_lrs_.size(), "LRScheduler: the optimizer has ",
             optimizer_->num_param_groups(), " parameter groups but the scheduler was made for ", base_lrs_.size());
  apply(get_lr());
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_->set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (size_t g = 0; g < optimizer_->num_param_groups(); ++g) out.push_back(optimizer_->lr(g));
  return out;
}

namespace {

Tensor doubles(const std::vector<double>& v) { return tensor(v, Shape{int64_t(v.size())}, kFloat64); }

const Tensor& entry(const TensorMap& sd, const std::string& key, int64_t numel) {
  auto it = sd.find(key);
  KILN_CHECK_HINT(it != sd.end(), "load a state_dict saved from the same kind of scheduler",
                  "LRScheduler.load_state_dict: missing '", key, "'");
  const Tensor& t = it->second;
  KILN_CHECK(t.defined() && t.dtype() != kBool && (numel < 0 ? t.dim() == 0 : t.dim() == 1 && t.numel() == numel),
             "LRScheduler.load_state_dict: '", key, "' must be ", numel < 0 ? std::string("a 0-d number")
                                                                            : "a 1-d tensor of " + std::to_string(numel) + " numbers");
  return t;
}

}  // namespace

TensorMap LRScheduler::state_dict() const {
  return {{"last_epoch", scalar_tensor(last_epoch_, kInt64)},
          {"step_count", scalar_tensor(step_count_, kInt64)},
          {"base_lrs", doubles(base_lrs_)},
          {"last_lr", doubles(last_lr_)}};
}

void LRScheduler::load_state_dict(const TensorMap& sd, SourceLoc loc) {
  ops::CallSite site(loc);
  for (const auto& [k, t] : sd)
    KILN_CHECK(k == "last_epoch" || k == "step_count" || k == "base_lrs" || k == "last_lr" || k.rfind("schedulers.", 0) == 0,
               "LRScheduler.load_state_dict: unexpected key '", k, "'");
  const int64_t n = int64_t(base_lrs_.size());
  const int64_t epoch = entry(sd, "last_epoch", -1).item<int64_t>();
  const int64_t count = entry(sd, "step_count", -1).item<int64_t>();
  std::vector<double> base = entry(sd, "base_lrs", n).to_vector<double>();
  std::vector<double> last = entry(sd, "last_lr", n).to_vector<double>();
  last_epoch_ = epoch;
  step_count_ = count;
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

// ------------------------------------------------------------------------------ StepLR
StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  KILN_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ != 0 && last_epoch_ % step_size_ == 0)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::vector<double> StepLR::closed_form_lr() {
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= std::pow(gamma_, double(last_epoch_ / step_size_));
  return lrs;
}

// ------------------------------------------------------------------------------ LinearLR
LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_(start_factor), end_(end_factor), total_(total_iters) {
  KILN_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR: start_factor must be in (0, 1], got ", start_factor);
  KILN_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR: end_factor must be in [0, 1], got ", end_factor);
  KILN_CHECK(total_iters > 0, "LinearLR: total_iters must be positive, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_;
  } else if (last_epoch_ <= total_) {
    // The ratio of consecutive factors, so that other schedulers' changes compose.
    const double d = end_ - start_;
    const double r = 1 + d / (double(total_) * start_ + double(last_epoch_ - 1) * d);
    for (double& lr : lrs) lr *= r;
  }
  return lrs;
}

std::vector<double> LinearLR::closed_form_lr() {
  std::vector<double> lrs = base_lrs_;
  const double f = start_ + (end_ - start_) * double(std::min(total_, last_epoch_)) / double(total_);
  for (double& lr : lrs) lr *= f;
  return lrs;
}

// ------------------------------------------------------------------------------ CosineAnnealingLR
CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  KILN_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  constexpr double pi = std::numbers::pi;
  const double T = double(t_max_), e = double(last_epoch_);
  if (last_epoch_ == 0) return group_lrs();
  if (step_count_ == 1 && last_epoch_ > 0) return closed_form_lr();
  std::vector<double> lrs = group_lrs();
  for (size_t g = 0; g < lrs.size(); ++g) {
    if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
      // Leaving the minimum: the recursive ratio below would be 0/0.
      lrs[g] += (base_lrs_[g] - eta_min_) * (1 - std::cos(pi / T)) / 2;
    } else {
      lrs[g] = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lrs[g] - eta_min_) + eta_min_;
    }
  }
  return lrs;
}

std::vector<double> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs)
    lr = eta_min_ + (lr - eta_min_) * (1 + std::cos(std::numbers::pi * double(last_epoch_) / double(t_max_))) / 2;
  return lrs;
}

// ------------------------------------------------------------------------------ SequentialLR
SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  KILN_CHECK(!schedulers_.empty(), "SequentialLR: expects at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    KILN_CHECK(schedulers_[i] != nullptr, "SequentialLR: scheduler ", i, " is null");
    KILN_CHECK_HINT(&schedulers_[i]->optimizer() == &optimizer, "build every scheduler on the same optimizer",
                    "SequentialLR: scheduler ", i, " drives a different optimizer");
  }
  KILN_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: expects ", schedulers_.size() - 1,
             " milestones for ", schedulers_.size(), " schedulers, got ", milestones_.size());
  KILN_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), "SequentialLR: milestones must be increasing");
  // Back to the initial lrs, undo the schedulers' initial steps, and start the first one.
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) optimizer.set_lr(g, *optimizer.initial_lr(g));
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  last_epoch_ = 0;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  ++step_count_;
  const size_t idx = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    // Restart the next scheduler at its epoch 0, from its closed form.
    ++s.step_count_;
    s.last_epoch_ = 0;
    s.apply(s.closed_form_lr());
  } else {
    s.step();
  }
  last_lr_ = s.get_last_lr();
}

TensorMap SequentialLR::state_dict() const {
  TensorMap out = LRScheduler::state_dict();
  for (size_t i = 0; i < schedulers_.size(); ++i)
    for (auto& [k, t] : schedulers_[i]->state_dict()) out["schedulers." + std::to_string(i) + "." + k] = t;
  return out;
}

void SequentialLR::load_state_dict(const TensorMap& sd, SourceLoc loc) {
  ops::CallSite site(loc);
  // Splits a dict into this scheduler's entries and each child's.
  auto split = [&](const TensorMap& m) {
    std::vector<TensorMap> parts(schedulers_.size() + 1);
    for (const auto& [k, t] : m) {
      if (k.rfind("schedulers.", 0) != 0) {
        parts[0][k] = t;
        continue;
      }
      const size_t dot = k.find('.', 11);
      size_t i = 0;
      const char* b = k.data() + 11;
      const char* e = k.data() + (dot == std::string::npos ? k.size() : dot);
      auto [ptr, ec] = std::from_chars(b, e, i);
      KILN_CHECK(dot != std::string::npos && ec == std::errc() && ptr == e && i < schedulers_.size(),
                 "SequentialLR.load_state_dict: unexpected key '", k, "' (", schedulers_.size(), " schedulers)");
      parts[i + 1][k.substr(dot + 1)] = t;
    }
    return parts;
  };
  auto load = [&](const std::vector<TensorMap>& parts) {
    LRScheduler::load_state_dict(parts[0]);
    for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(parts[i + 1]);
  };
  const std::vector<TensorMap> parts = split(sd);
  const std::vector<TensorMap> before = split(state_dict());
  try {
    load(parts);
  } catch (...) {
    load(before);  // a bad entry changes nothing
    throw;
  }
}

std::unique_ptr<SequentialLR> warmup_cosine(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps,
                                            double min_lr, double warmup_start_factor) {
  KILN_CHECK(warmup_steps > 0 && total_steps > warmup_steps, "warmup_cosine: needs 0 < warmup_steps < total_steps, got ",
             warmup_steps, " and ", total_steps);
  auto warmup = std::make_shared<LinearLR>(optimizer, warmup_start_factor, 1.0, warmup_steps);
  auto cosine = std::make_shared<CosineAnnealingLR>(optimizer, total_steps - warmup_steps, min_lr);
  return std::make_unique<SequentialLR>(optimizer, std::vector<std::shared_ptr<LRScheduler>>{warmup, cosine},
                                        std::vector<int64_t>{warmup_steps});
}

}  // namespace kiln::optim
