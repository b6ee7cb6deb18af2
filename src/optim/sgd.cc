// SGD with momentum, dampening, Nesterov momentum, L2 weight decay and maximize (torch.optim.SGD).
#include <kiln/optim.h>

namespace kiln::optim {

void SGDOptions::check() const {
  KILN_CHECK(lr >= 0, "SGD: invalid learning rate ", lr);
  KILN_CHECK(momentum >= 0, "SGD: invalid momentum ", momentum);
  KILN_CHECK(weight_decay >= 0, "SGD: invalid weight_decay ", weight_decay);
  KILN_CHECK_HINT(!nesterov || (momentum > 0 && dampening == 0), "set momentum > 0 and dampening = 0",
                  "SGD: Nesterov momentum requires a momentum and zero dampening");
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options, SourceLoc loc)
    : OptimizerWithOptions("SGD", {"momentum_buffer"}, std::move(params), options, loc) {}

void SGD::step_impl() {
  for (size_t g = 0; g < groups_.size(); ++g) {
    const SGDOptions& o = options_[g];
    const size_t base = first_index(g);
    for (size_t j = 0; j < groups_[g].params.size(); ++j) {
      Tensor& p = groups_[g].params[j];
      Tensor d = p.grad();
      if (!d.defined()) continue;
      // maximize negates the gradient first, so weight decay still pulls towards zero.
      if (o.maximize) d = neg(d);
      if (o.weight_decay != 0) d = add(d, mul(p, o.weight_decay));
      if (o.momentum != 0) {
        Tensor& buf = state_[base + j]["momentum_buffer"];
        if (!buf.defined()) {
          buf = clone(d).detach();
        } else {
          buf.mul_(o.momentum).add_(mul(d, 1 - o.dampening));
        }
        d = o.nesterov ? add(d, mul(buf, o.momentum)) : buf;
      }
      p.sub_(mul(d, o.lr));
    }
  }
}

}  // namespace kiln::optim
