// kiln::optim: optimizers (SGD, Adam, AdamW, Adadelta, Adagrad, RMSprop, NAdam, RAdam) and
// learning-rate schedulers with PyTorch's update rules, defaults and state_dict layout; gradient
// clipping (kiln::nn::utils). See docs/optim.md.
#pragma once
#include <kiln/autograd.h>
#include <kiln/io.h>
#include <kiln/ops.h>
#include <kiln/tensor.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::optim {

// The state of one parameter: named tensors ("step", "exp_avg", "momentum_buffer", ...).
using ParamState = std::map<std::string, Tensor>;

// Base of every optimizer. Parameters live in groups, each with its own options; state is kept per
// parameter, indexed by the parameter's position over all groups in order (as PyTorch's state_dict).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (those whose grad is undefined are skipped).
  // Runs without recording autograd history and updates the parameter tensors in place.
  void step(SourceLoc loc = SourceLoc::current());
  // Re-evaluates the loss with `closure` (grad mode on), then steps; returns the closure's loss.
  Tensor step(const std::function<Tensor()>& closure, SourceLoc loc = SourceLoc::current());
  // Drops (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  size_t num_param_groups() const { return groups_.size(); }
  const std::vector<Tensor>& params(size_t group) const;
  std::vector<Tensor> all_params() const;  // every group's, in state index order
  double lr(size_t group) const;
  void set_lr(size_t group, double lr);
  // The lr the first scheduler attached to this optimizer started from (PyTorch's 'initial_lr').
  std::optional<double> initial_lr(size_t group) const;
  void set_initial_lr(size_t group, double lr);

  // State of a parameter (by its index over all groups, or by the tensor itself); empty before
  // the parameter's first update.
  const ParamState& state(size_t param_index) const;
  ParamState& state(size_t param_index);
  ParamState& state(const Tensor& param);

  // A flat map: "state.<i>.<name>" (state tensors; "step" is a 0-d float32 count),
  // "param_groups.<g>.<option>" (0-d float64 numbers, 0-d bool flags, "betas" a float64[2],
  // "params" the group's int64 parameter indices). It can be saved with save_safetensors.
  TensorMap state_dict() const;
  // Loads a map produced by state_dict() of an optimizer of the same kind over parameters of the
  // same group sizes and shapes. Validates everything first (kiln::Error on any mismatch) and
  // changes nothing if it throws. State tensors are copied and cast to their parameter's dtype.
  void load_state_dict(const TensorMap& state_dict, SourceLoc loc = SourceLoc::current());

  const std::string& name() const { return name_; }

 protected:
  // A named option of a group, visited for (de)serialization.
  struct OptionRef {
    std::string name;
    double* number = nullptr;
    bool* flag = nullptr;
    std::array<double, 2>* pair = nullptr;
  };
  Optimizer(std::string name, std::vector<std::string> state_names)
      : name_(std::move(name)), state_names_(std::move(state_names)) {}
  // Runs check_options, checks the parameters (leaf floating tensors, none already in a group),
  // then appends a group; errors report `loc`.
  void add_group(std::vector<Tensor> params, const std::function<void()>& check_options, SourceLoc loc);
  virtual void step_impl() = 0;
  virtual double& group_lr(size_t group) = 0;
  virtual std::vector<OptionRef> group_options(size_t group) = 0;
  virtual void check_options(size_t group) = 0;  // after loading; throws kiln::Error
  // Index over all groups of the first parameter of `group`.
  size_t first_index(size_t group) const;
  // The group's lr as a 0-d float64 tensor, for capturable updates: inside a compiled step it is
  // a graph input (a real tensor, refreshed here and by set_lr), so a scheduler's new lr reaches
  // the compiled step instead of the lr it was traced with being baked in as a constant.
  const Tensor& lr_tensor(size_t group);

  struct Group {
    std::vector<Tensor> params;
    std::optional<double> initial_lr;
    Tensor lr_value;  // lr_tensor's storage; undefined until a capturable update asks for it
  };
  std::vector<Group> groups_;
  std::vector<ParamState> state_;  // one per parameter over all groups

 private:
  std::string name_;
  std::vector<std::string> state_names_;  // the state entries this optimizer may hold
};

// Typed options per group. Options is an aggregate with an `lr` member, a `visit` listing its
// fields and a `check` that throws kiln::Error on invalid values.
template <class Options>
class OptimizerWithOptions : public Optimizer {
 public:
  // Adds a group with the optimizer's construction-time options, or with the given ones.
  void add_param_group(std::vector<Tensor> params, SourceLoc loc = SourceLoc::current()) {
    add_param_group(std::move(params), defaults_, loc);
  }
  void add_param_group(std::vector<Tensor> params, const Options& options, SourceLoc loc = SourceLoc::current()) {
    add_group(std::move(params), [&] { options.check(); }, loc);
    options_.push_back(options);
  }
  const Options& defaults() const { return defaults_; }
  Options& options(size_t group) {
    params(group);  // kiln::Error when out of range
    return options_[group];
  }
  const Options& options(size_t group) const {
    params(group);
    return options_[group];
  }

 protected:
  OptimizerWithOptions(std::string name, std::vector<std::string> state_names, std::vector<Tensor> params,
                       const Options& defaults, SourceLoc loc)
      : Optimizer(std::move(name), std::move(state_names)), defaults_(defaults) {
    add_param_group(std::move(params), defaults, loc);
  }
  double& group_lr(size_t group) override { return options_.at(group).lr; }
  std::vector<OptionRef> group_options(size_t group) override {
    std::vector<OptionRef> out;
    options_.at(group).visit([&](const char* n, auto& v) {
      OptionRef r{.name = n};
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) r.number = &v;
      else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) r.flag = &v;
      else r.pair = &v;
      out.push_back(r);
    });
    return out;
  }
  void check_options(size_t group) override { options_.at(group).check(); }
  // Runs update(param, its state, its group's options) for every parameter that has a gradient.
  template <class F>
  void for_each_param(F&& update) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      const size_t base = first_index(g);
      for (size_t j = 0; j < groups_[g].params.size(); ++j)
        if (groups_[g].params[j].grad().defined()) update(groups_[g].params[j], state_[base + j], options_[g]);
    }
  }

  Options defaults_;
  std::vector<Options> options_;
};

// ------------------------------------------------------------------------------------------ SGD
// g = grad (negated if maximize); g += weight_decay * p; with momentum: b = g on the first step,
// else b = momentum * b + (1 - dampening) * g; g = nesterov ? g + momentum * b : b; p -= lr * g.
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("momentum", momentum), f("dampening", dampening), f("weight_decay", weight_decay);
    f("nesterov", nesterov), f("maximize", maximize);
  }
  void check() const;
};

class SGD : public OptimizerWithOptions<SGDOptions> {
 public:
  explicit SGD(std::vector<Tensor> params, const SGDOptions& options = {}, SourceLoc loc = SourceLoc::current());

 protected:
  void step_impl() override;
};

// ------------------------------------------------------------------------------- Adam, AdamW
// g = grad (negated if maximize); Adam: g += weight_decay * p (L2); AdamW: p *= 1 - lr * weight_decay.
// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; amsgrad: vmax = max(vmax, v), used instead of v;
// p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).
struct AdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  // Bias corrections computed with tensor ops on the step tensor instead of on the host (no
  // step.item()), so the update can be captured by compile() (torch's capturable=True). Not a
  // param-group option.
  bool capturable = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("betas", betas), f("eps", eps), f("weight_decay", weight_decay);
    f("amsgrad", amsgrad), f("maximize", maximize);
  }
  void check() const;
};

struct AdamWOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
  // Bias corrections computed with tensor ops on the step tensor instead of on the host (no
  // step.item()), so the update can be captured by compile() (torch's capturable=True). Not a
  // param-group option.
  bool capturable = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("betas", betas), f("eps", eps), f("weight_decay", weight_decay);
    f("amsgrad", amsgrad), f("maximize", maximize);
  }
  void check() const;
};

class Adam : public OptimizerWithOptions<AdamOptions> {
 public:
  explicit Adam(std::vector<Tensor> params, const AdamOptions& options = {}, SourceLoc loc = SourceLoc::current());

 protected:
  void step_impl() override;
};

class AdamW : public OptimizerWithOptions<AdamWOptions> {
 public:
  explicit AdamW(std::vector<Tensor> params, const AdamWOptions& options = {}, SourceLoc loc = SourceLoc::current());

 protected:
  void step_impl() override;
};

// ---------------------------------------- Adadelta, Adagrad, RMSprop, NAdam, RAdam (src/optim/adaptive.cc)
// As torch.optim's (defaults, option names, state names, the update rules of its documentation).
// Every one: g = grad (negated if maximize), then L2 weight decay g += weight_decay * p unless a
// decoupled_weight_decay option says p *= 1 - lr * weight_decay instead.

// sq = rho sq + (1-rho) g^2; d = sqrt(acc + eps) / sqrt(sq + eps) * g; acc = rho acc + (1-rho) d^2; p -= lr d.
struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0;
  bool maximize = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("rho", rho), f("eps", eps), f("weight_decay", weight_decay), f("maximize", maximize);
  }
  void check() const;
};

// sum += g^2 (sum starts at initial_accumulator_value); p -= lr / (1 + (t-1) lr_decay) * g / (sqrt(sum) + eps).
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("lr_decay", lr_decay), f("weight_decay", weight_decay);
    f("initial_accumulator_value", initial_accumulator_value), f("eps", eps), f("maximize", maximize);
  }
  void check() const;
};

// sq = alpha sq + (1-alpha) g^2; centered: ga = alpha ga + (1-alpha) g, avg = sqrt(sq - ga^2) + eps,
// else avg = sqrt(sq) + eps; momentum: b = momentum b + g / avg, p -= lr b; else p -= lr g / avg.
struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("alpha", alpha), f("eps", eps), f("weight_decay", weight_decay), f("momentum", momentum);
    f("centered", centered), f("maximize", maximize);
  }
  void check() const;
};

// Adam's moments with Nesterov momentum: mu_t = b1 (1 - 0.5 * 0.96^(t psi)), mu_product = prod mu_t
// (state, float32); d = sqrt(v / (1 - b2^t)) + eps;
// p -= lr (1 - mu_t) / (1 - mu_product) g / d + lr mu_{t+1} / (1 - mu_product mu_{t+1}) m / d.
struct NAdamOptions {
  double lr = 2e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum_decay = 4e-3;
  bool decoupled_weight_decay = false;
  bool maximize = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("betas", betas), f("eps", eps), f("weight_decay", weight_decay);
    f("momentum_decay", momentum_decay), f("decoupled_weight_decay", decoupled_weight_decay), f("maximize", maximize);
  }
  void check() const;
};

// Rectified Adam: rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 t b2^t / (1 - b2^t); when rho_t > 5
// p -= lr r m / (1 - b1^t) * sqrt(1 - b2^t) / (sqrt(v) + eps), r the variance rectification term;
// otherwise p -= lr m / (1 - b1^t) (plain momentum).
struct RAdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;
  bool maximize = false;
  template <class F>
  void visit(F&& f) {
    f("lr", lr), f("betas", betas), f("eps", eps), f("weight_decay", weight_decay);
    f("decoupled_weight_decay", decoupled_weight_decay), f("maximize", maximize);
  }
  void check() const;
};

#define KILN_OPTIMIZER(Name)                                                                                          \
  class Name : public OptimizerWithOptions<Name##Options> {                                                         \
   public:                                                                                                           \
    explicit Name(std::vector<Tensor> params, const Name##Options& options = {}, SourceLoc loc = SourceLoc::current()); \
                                                                                                                     \
   protected:                                                                                                        \
    void step_impl() override;                                                                                       \
  };
KILN_OPTIMIZER(Adadelta)
KILN_OPTIMIZER(Adagrad)
KILN_OPTIMIZER(RMSprop)
KILN_OPTIMIZER(NAdam)
KILN_OPTIMIZER(RAdam)
#undef KILN_OPTIMIZER

// ------------------------------------------------------------------------------ LR schedulers
// As torch.optim.lr_scheduler: construction sets each group's initial_lr (if not yet set) and
// takes one step to epoch 0; step() advances one epoch and writes the new lrs into the optimizer.
// Updates are chainable (computed from the groups' current lrs), so schedulers can be combined.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  virtual void step();
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  // The scheduler's progress ("last_epoch", "step_count", "base_lrs", "last_lr"; SequentialLR adds
  // "schedulers.<i>.<key>"); options come from construction. To resume: build the optimizer and
  // scheduler as before, then load both state dicts. kiln::Error on a mismatch.
  virtual TensorMap state_dict() const;
  virtual void load_state_dict(const TensorMap& state_dict, SourceLoc loc = SourceLoc::current());
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }
  Optimizer& optimizer() const { return *optimizer_; }

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Takes the initial step; derived constructors call it once their members are set.
  void initial_step();
  // The lrs at last_epoch_ from the groups' current lrs (the recursive form).
  virtual std::vector<double> get_lr() = 0;
  // The lrs at last_epoch_ from base_lrs_ (used when jumping to an epoch, as SequentialLR does).
  virtual std::vector<double> closed_form_lr() = 0;
  void apply(const std::vector<double>& lrs);
  std::vector<double> group_lrs() const;

  Optimizer* optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;

  friend class SequentialLR;
};

// lr = base_lr * gamma^(epoch / step_size) (integer division).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = base_lr * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) / total_iters):
// linear warmup when start_factor < end_factor = 1.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  double start_, end_;
  int64_t total_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// Runs schedulers[0] until epoch milestones[0], then schedulers[1] (restarted at its epoch 0), ...
// The schedulers must drive `optimizer`. Warmup + cosine (the usual GPT recipe):
//   SequentialLR(opt, {make_shared<LinearLR>(opt, 1e-3, 1.0, W), make_shared<CosineAnnealingLR>(opt, T - W, min_lr)}, {W})
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  TensorMap state_dict() const override;
  void load_state_dict(const TensorMap& state_dict, SourceLoc loc = SourceLoc::current()) override;

 protected:
  std::vector<double> get_lr() override { return last_lr_; }
  std::vector<double> closed_form_lr() override { return last_lr_; }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Linear warmup from lr * warmup_start_factor to lr over warmup_steps, then cosine decay to min_lr
// at total_steps (a SequentialLR of LinearLR and CosineAnnealingLR, as the GPT recipe uses).
std::unique_ptr<SequentialLR> warmup_cosine(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps,
                                            double min_lr = 0.0, double warmup_start_factor = 1e-3);

}  // namespace kiln::optim

namespace kiln::nn::utils {

// Scales the gradients of `params` (those that have one) in place so that their joint norm (the
// norm_type-norm of the per-gradient norms; inf: the largest |g|) is at most max_norm, by
// max_norm / (total + 1e-6) when that is below 1. Returns the total norm before clipping (0-d).
// error_if_nonfinite: throw kiln::Error if the total norm is nan or inf.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false, SourceLoc loc = SourceLoc::current());
// Clamps every gradient of `params` in place to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value, SourceLoc loc = SourceLoc::current());

}  // namespace kiln::nn::utils
