// kiln's scalar semantics: the one definition of what every pointwise prim of ops.def computes
// on one element, for the host and for a GPU. The eager CPU kernels call these functions, and the
// same text (scalar::prelude(), this file with its parts inlined) is the prelude of generated
// C and CUDA, so compiled results are eager's bit for bit wherever both use the same libm.
//
// Rules for this header: C++17, no exceptions, no globals, no standard library on the device
// side (base.h hides the difference); every function is KILN_SCALAR (inline, host and device).
// Naming: kiln::scalar::<ops.def id> (exp, floor_divide, where, convert_element_type, ...), a
// template over the compute types the op is defined for (bool, u8, i8..i64, float, double; the
// 16-bit floats are computed in float and stored with float_to_float16 / float_to_bfloat16).
// docs/ops.md, "Adding a pointwise prim", lists what a new prim needs here.
#pragma once
#include "scalar/base.h"
#include "scalar/int.h"
#include "scalar/special.h"
#include "scalar/cast.h"
#include "scalar/unary.h"
#include "scalar/binary.h"
