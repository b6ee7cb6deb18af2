// Loss modules over the functional losses (reduction: "mean", "sum" or "none").
#pragma once
#include <kiln/nn/module.h>

#include <string>

namespace kiln::nn {

struct CrossEntropyLossOptions {
  Tensor weight = {};  // per-class weights (C), optional; registered as a buffer
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  std::string reduction = "mean";
};
class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  std::string extra_repr() const override;
  CrossEntropyLossOptions options;
  Tensor& weight;
};
KILN_MODULE(CrossEntropyLoss);

struct NLLLossOptions {
  Tensor weight = {};
  int64_t ignore_index = -100;
  std::string reduction = "mean";
};
class NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  std::string extra_repr() const override;
  NLLLossOptions options;
  Tensor& weight;
};
KILN_MODULE(NLLLoss);

struct ReductionOptions {
  std::string reduction = "mean";
};
class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const ReductionOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  std::string extra_repr() const override;
  ReductionOptions options;
};
KILN_MODULE(MSELoss);

class L1LossImpl : public Module {
 public:
  explicit L1LossImpl(const ReductionOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  std::string extra_repr() const override;
  ReductionOptions options;
};
KILN_MODULE(L1Loss);

struct BCEWithLogitsLossOptions {
  Tensor weight = {};      // rescales each element's loss (broadcast to the input)
  Tensor pos_weight = {};  // weight of the positive term, per class (broadcast over the last dim)
  std::string reduction = "mean";
};
class BCEWithLogitsLossImpl : public Module {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  std::string extra_repr() const override;
  BCEWithLogitsLossOptions options;
  Tensor& weight;
  Tensor& pos_weight;
};
KILN_MODULE(BCEWithLogitsLoss);

}  // namespace kiln::nn
