// kiln: the umbrella header.
#pragma once
#include <kiln/autocast.h>
#include <kiln/autograd.h>
#include <kiln/compile.h>
#include <kiln/cuda.h>
#include <kiln/device.h>
#include <kiln/dtype.h>
#include <kiln/error.h>
#include <kiln/io.h>
#include <kiln/log.h>
#include <kiln/ops.h>
#include <kiln/symint.h>
#include <kiln/tensor.h>
