// Conv2d, MaxPool2d, AvgPool2d.
#include <kiln/nn/conv.h>
#include <kiln/nn/init.h>

#include <cmath>

namespace kiln::nn {
namespace {

// (built with a stream: GCC 12 gives a false -Wrestrict for "(" + std::to_string(...) at -O3)
std::string pair(const Size2& s) { return detail::cat("(", s.h, ", ", s.w, ")"); }

Conv2dOptions checked(const Conv2dOptions& o) {
  KILN_CHECK(o.groups > 0, "Conv2d: groups must be positive, got ", o.groups);
  KILN_CHECK(o.in_channels > 0 && o.out_channels > 0, "Conv2d: expected positive in_channels and out_channels, got ",
             o.in_channels, " and ", o.out_channels);
  KILN_CHECK(o.in_channels % o.groups == 0, "Conv2d: in_channels (", o.in_channels, ") must be divisible by groups (",
             o.groups, ")");
  KILN_CHECK(o.out_channels % o.groups == 0, "Conv2d: out_channels (", o.out_channels,
             ") must be divisible by groups (", o.groups, ")");
  KILN_CHECK(o.kernel_size.h > 0 && o.kernel_size.w > 0, "Conv2d: kernel_size must be positive, got ",
             pair(o.kernel_size));
  return o;
}

}  // namespace

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o)
    : options(checked(o)),
      weight(register_parameter(
          "weight", kiln::empty({o.out_channels, o.in_channels / o.groups, o.kernel_size.h, o.kernel_size.w}))),
      bias(register_parameter("bias", o.bias ? kiln::empty({o.out_channels}) : Tensor())) {
  reset_parameters();
}

void Conv2dImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2dImpl::forward(const Tensor& input) {
  return conv2d(input, weight, bias, options.stride.vec(), options.padding.vec(), options.dilation.vec(),
                options.groups);
}

std::string Conv2dImpl::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.in_channels) + ", " + std::to_string(o.out_channels) +
                  ", kernel_size=" + pair(o.kernel_size) + ", stride=" + pair(o.stride);
  if (o.padding != Size2(0)) s += ", padding=" + pair(o.padding);
  if (o.dilation != Size2(1)) s += ", dilation=" + pair(o.dilation);
  if (o.groups != 1) s += ", groups=" + std::to_string(o.groups);
  if (!o.bias) s += ", bias=false";
  return s;
}

MaxPool2dImpl::MaxPool2dImpl(const MaxPool2dOptions& o) : options(o) {
  if (!options.stride) options.stride = options.kernel_size;
}

Tensor MaxPool2dImpl::forward(const Tensor& input) {
  const auto& o = options;
  return max_pool2d(input, o.kernel_size.vec(), o.stride->vec(), o.padding.vec(), o.dilation.vec(), o.ceil_mode);
}

std::string MaxPool2dImpl::extra_repr() const {
  const auto& o = options;
  return "kernel_size=" + pair(o.kernel_size) + ", stride=" + pair(*o.stride) + ", padding=" + pair(o.padding) +
         ", dilation=" + pair(o.dilation) + ", ceil_mode=" + (o.ceil_mode ? "true" : "false");
}

AvgPool2dImpl::AvgPool2dImpl(const AvgPool2dOptions& o) : options(o) {
  if (!options.stride) options.stride = options.kernel_size;
}

Tensor AvgPool2dImpl::forward(const Tensor& input) {
  const auto& o = options;
  return avg_pool2d(input, o.kernel_size.vec(), o.stride->vec(), o.padding.vec(), o.ceil_mode, o.count_include_pad);
}

std::string AvgPool2dImpl::extra_repr() const {
  const auto& o = options;
  return "kernel_size=" + pair(o.kernel_size) + ", stride=" + pair(*o.stride) + ", padding=" + pair(o.padding) +
         ", ceil_mode=" + (o.ceil_mode ? "true" : "false") +
         ", count_include_pad=" + (o.count_include_pad ? "true" : "false");
}

}  // namespace kiln::nn
