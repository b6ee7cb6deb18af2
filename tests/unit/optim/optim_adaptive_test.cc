// Adadelta, Adagrad, RMSprop, NAdam and RAdam against torch.optim: the same problem run 8 steps
// from the same weights; the losses and final weights are the numbers torch.optim gives for it
// (tests/python/test_optim_more.py checks kiln.optim's classes, which run these, against torch live).
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/optim.h>

#include <functional>
#include <memory>

using namespace kiln;
using namespace kiln::optim;

namespace {

struct Case {
  const char* name;
  std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)> make;
  std::vector<double> losses;  // torch's, before each step
  std::vector<double> weights;  // torch's, after the last step
};

// loss = sum(c * w^2) + sum(d * w) over w = [0.5, -1, 2, 0.25] in float32; torch's numbers from
//   w = torch.tensor([0.5, -1.0, 2.0, 0.25], requires_grad=True); opt = torch.optim.<Name>([w], **options)
//   loss = (w * w * torch.tensor([1., 2., 3., .5])).sum() + (w * torch.tensor([.3, -.2, .1, 1.])).sum()
//   (zero_grad, backward, step, 8 times; options as the C++ ones below)
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
    {"Adadelta",
     [](std::vector<Tensor> p) {
       return std::make_unique<Adadelta>(p, AdadeltaOptions{});
     },
     {15.0812502, 15.0217056, 14.9608135, 14.8990889, 14.8367891, 14.7740669, 14.7110252, 14.6477318},
     {0.473564267, -0.973443866, 1.97335017, 0.223412737}},
    {"Adadelta",
     [](std::vector<Tensor> p) {
       return std::make_unique<Adadelta>(p,
         AdadeltaOptions{.lr = 0.5, .rho = 0.8, .weight_decay = 0.1, .maximize = true});
     },
     {15.0812502, 15.1023331, 15.1245804, 15.147665, 15.1714296, 15.1957827, 15.2206688, 15.2460461},
     {0.510100603, -1.01008558, 2.01007342, 0.260079801}},
    {"Adagrad",
     [](std::vector<Tensor> p) {
       return std::make_unique<Adagrad>(p, AdagradOptions{.lr = 0.1});
     },
     {15.0812502, 13.2612495, 12.0948496, 11.2070627, 10.4817944, 9.86559677, 9.3287611, 8.85278606},
     {0.130248383, -0.601919055, 1.58208108, -0.154929742}},
    {"Adagrad",
     [](std::vector<Tensor> p) {
       return std::make_unique<Adagrad>(p,
         AdagradOptions{.lr = 0.1, .lr_decay = 0.05, .weight_decay = 0.1, .initial_accumulator_value = 0.5});
     },
     {15.0812502, 13.2953835, 12.1914587, 11.3821812, 10.7439518, 10.2191296, 9.77548981, 9.39297104},
     {0.182163984, -0.6434986, 1.62642741, -0.0889632478}},
    {"RMSprop",
     [](std::vector<Tensor> p) {
       return std::make_unique<RMSprop>(p, RMSpropOptions{});
     },
     {15.0812502, 13.2612495, 12.0917978, 11.1995153, 10.4688759, 9.84672832, 9.30354309, 8.82094002},
     {0.12780866, -0.599173665, 1.57918024, -0.157734707}},
    {"RMSprop",
     [](std::vector<Tensor> p) {
       return std::make_unique<RMSprop>(p,
         RMSpropOptions{.lr = 0.01, .weight_decay = 0.1, .momentum = 0.9, .centered = true});
     },
     {15.0812502, 13.2524109, 10.6192636, 7.82618666, 5.29009676, 3.24354601, 1.76870561, 0.838692784},
     {-0.572142661, 0.39853251, 0.370680809, -1.19737077}},
    {"NAdam",
     [](std::vector<Tensor> p) {
       return std::make_unique<NAdam>(p, NAdamOptions{.lr = 0.01});
     },
     {15.0812502, 14.8828335, 14.7370577, 14.6018209, 14.4677076, 14.3317833, 14.1931791, 14.051816},
     {0.436940461, -0.93653816, 1.93623066, 0.18643491}},
    {"NAdam",
     [](std::vector<Tensor> p) {
       return std::make_unique<NAdam>(p, NAdamOptions{.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = true});
     },
     {15.0812502, 14.8536682, 14.6793079, 14.515975, 14.3542442, 14.1911926, 14.0259638, 13.85849},
     {0.433249116, -0.928876758, 1.92060053, 0.184688255}},
    {"RAdam",
     [](std::vector<Tensor> p) {
       return std::make_unique<RAdam>(p, RAdamOptions{.lr = 0.01});
     },
     {15.0812502, 13.4559221, 11.9703932, 10.6166391, 9.38671875, 8.27279282, 8.26913357, 8.26451778},
     {0.435438216, -0.798043787, 1.43265259, 0.187207937}},
    {"RAdam",
     [](std::vector<Tensor> p) {
       return std::make_unique<RAdam>(p, RAdamOptions{.lr = 0.01, .betas = {0.5, 0.6}, .weight_decay = 0.1});
     },
     {15.0812502, 13.4282112, 11.9319706, 10.5872498, 9.38565731, 8.31660652, 7.36834335, 6.5288372},
     {0.398256153, -0.693866491, 1.17286181, 0.151137188}},
  };
  return all;
}

class AdaptiveOptimizers : public ::testing::TestWithParam<size_t> {};

TEST_P(AdaptiveOptimizers, MatchTorchStepByStep) {
  const Case& c = cases()[GetParam()];
  Tensor w = tensor(std::vector<double>{0.5, -1.0, 2.0, 0.25}, Shape{4}, kFloat32);
  w.requires_grad_();
  const Tensor scale = tensor(std::vector<double>{1, 2, 3, 0.5}, Shape{4}, kFloat32);
  const Tensor shift = tensor(std::vector<double>{0.3, -0.2, 0.1, 1}, Shape{4}, kFloat32);
  std::unique_ptr<Optimizer> opt = c.make({w});
  for (size_t step = 0; step < c.losses.size(); ++step) {
    Tensor loss = add(sum(mul(mul(w, w), scale)), sum(mul(w, shift)));
    opt->zero_grad();
    loss.backward();
    opt->step();
    EXPECT_NEAR(loss.item<double>(), c.losses[step], 2e-5 * std::abs(c.losses[step])) << c.name << " step " << step;
  }
  const std::vector<double> got = w.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], c.weights[i], 2e-5) << c.name << " weight " << i;
  // The state names torch uses, so that state_dicts read alike.
  EXPECT_TRUE(opt->state(0).count("step")) << c.name;
  EXPECT_EQ(opt->state_dict().count("state.0.step"), 1u) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Torch, AdaptiveOptimizers, ::testing::Range(size_t(0), cases().size()),
                         [](const auto& info) { return cases()[info.param].name + std::to_string(info.param); });

TEST(AdaptiveOptimizerApi, RejectBadOptions) {
  Tensor w = zeros(Shape{2});
  w.requires_grad_();
  EXPECT_THROW(Adadelta({w}, AdadeltaOptions{.rho = 1.5}), Error);
  EXPECT_THROW(Adagrad({w}, AdagradOptions{.lr_decay = -1}), Error);
  EXPECT_THROW(RMSprop({w}, RMSpropOptions{.alpha = -0.1}), Error);
  EXPECT_THROW(NAdam({w}, NAdamOptions{.betas = {1.0, 0.999}}), Error);
  EXPECT_THROW(RAdam({w}, RAdamOptions{.eps = -1}), Error);
}

TEST(AdaptiveOptimizerApi, StateDictRoundTrip) {
  Tensor w = tensor(std::vector<double>{1, 2}, Shape{2}, kFloat32);
  w.requires_grad_();
  NAdam a({w}, NAdamOptions{.lr = 0.1, .momentum_decay = 0.01});
  w.set_grad(tensor(std::vector<double>{0.5, -0.5}, Shape{2}, kFloat32));
  a.step();
  Tensor w2 = tensor(std::vector<double>{1, 2}, Shape{2}, kFloat32);
  w2.requires_grad_();
  NAdam b({w2});
  b.load_state_dict(a.state_dict());
  EXPECT_DOUBLE_EQ(b.options(0).momentum_decay, 0.01);
  EXPECT_EQ(b.state(0).at("mu_product").item<double>(), a.state(0).at("mu_product").item<double>());
}

}  // namespace
