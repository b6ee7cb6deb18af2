// Conv2d, MaxPool2d, AvgPool2d.
#pragma once
#include <kiln/nn/module.h>

#include <optional>

namespace kiln::nn {

// A (height, width) pair that also accepts one number for both: `.kernel_size = 3` or `{3, 5}`.
struct Size2 {
  int64_t h = 0, w = 0;
  Size2(int64_t v) : h(v), w(v) {}
  Size2(int64_t h, int64_t w) : h(h), w(w) {}
  std::vector<int64_t> vec() const { return {h, w}; }
  bool operator==(const Size2&) const = default;
};

struct Conv2dOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  Size2 kernel_size = 1;
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};
// weight (out, in/groups, kh, kw): kaiming_uniform(a=sqrt(5)); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
class Conv2dImpl : public Module {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options);
  Conv2dImpl(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : Conv2dImpl(Conv2dOptions{in_channels, out_channels, kernel_size}) {}
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  Conv2dOptions options;
  Tensor& weight;
  Tensor& bias;
};
KILN_MODULE(Conv2d);

struct MaxPool2dOptions {
  Size2 kernel_size = 1;
  std::optional<Size2> stride = std::nullopt;  // default: kernel_size
  Size2 padding = 0;
  Size2 dilation = 1;
  bool ceil_mode = false;
};
class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options);
  explicit MaxPool2dImpl(Size2 kernel_size) : MaxPool2dImpl(MaxPool2dOptions{kernel_size}) {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  MaxPool2dOptions options;
};
KILN_MODULE(MaxPool2d);

struct AvgPool2dOptions {
  Size2 kernel_size = 1;
  std::optional<Size2> stride = std::nullopt;  // default: kernel_size
  Size2 padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
};
class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(const AvgPool2dOptions& options);
  explicit AvgPool2dImpl(Size2 kernel_size) : AvgPool2dImpl(AvgPool2dOptions{kernel_size}) {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  AvgPool2dOptions options;
};
KILN_MODULE(AvgPool2d);

}  // namespace kiln::nn
