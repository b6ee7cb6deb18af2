#!/usr/bin/env python3
"""Generates kiln's public op functions and Tensor methods from src/ops/ops.def.

Usage: gen_ops.py OPS_DEF OUT_DIR
Writes OUT_DIR/kiln/ops_gen.h (free functions), OUT_DIR/kiln/tensor_methods_gen.inc (method
declarations, included inside class Tensor), OUT_DIR/ops_gen.cc (their definitions, each
boxing its arguments and calling the dispatcher) and OUT_DIR/ops/args_gen.h (the typed argument
views over boxed ops::Args that meta functions, kernels and passes read arguments through).
Files are rewritten only when they change.
"""
import os
import re
import sys

LINE = re.compile(r'^KILN_OP\((\w+),\s*(\w+),\s*(\w+),\s*(\w+),\s*([\w\s|]+),\s*"((?:[^"\\]|\\.)*)"\)\s*$')


class Arg:
    def __init__(self, text):
        text = text.strip()
        m = re.match(r'^(\S+)\s+(\w+)(?:=(.*))?$', text)
        if not m:
            raise SystemExit(f"bad argument in schema: {text!r}")
        self.type, self.name, self.default = m.group(1), m.group(2), m.group(3)

    def cpp_type(self):
        t = self.type
        return {
            "Tensor": "const Tensor&", "Tensor?": "const Tensor&", "Tensor[]": "const TensorList&",
            "Tensor?[]": "const TensorList&", "Scalar": "Scalar", "Scalar?": "std::optional<Scalar>",
            "int": "int64_t", "int?": "std::optional<int64_t>", "int[]": "IntList", "int[]?": "IntList",
            "SymInt": "SymInt", "SymInt?": "std::optional<SymInt>", "SymInt[]": "SymIntList",
            "SymInt[]?": "std::optional<SymIntList>", "float": "double", "float?": "std::optional<double>",
            "float[]?": "std::optional<std::vector<double>>", "bool": "bool", "bool?": "std::optional<bool>",
            "ScalarType": "DType", "ScalarType?": "std::optional<DType>", "Device?": "std::optional<Device>",
            "str": "const std::string&", "str?": "std::optional<std::string>",
        }[t]

    def view_accessor(self, i):
        """The typed accessor of this argument in its op's argument view: (C++ type, Args read)."""
        return {
            "Tensor": ("const Tensor&", f"tensor({i})"), "Tensor?": ("Tensor", f"opt_tensor({i})"),
            "Tensor[]": ("const TensorList&", f"tensors({i})"), "Tensor?[]": ("const TensorList&", f"tensors({i})"),
            "Scalar": ("Scalar", f"scalar({i})"), "Scalar?": ("::std::optional<Scalar>", f"opt_scalar({i})"),
            "int": ("int64_t", f"i64({i})"), "int?": ("::std::optional<int64_t>", f"opt_i64({i})"),
            "int[]": ("const ::std::vector<int64_t>&", f"ints({i})"),
            "int[]?": ("::std::optional<::std::vector<int64_t>>", f"opt_ints({i})"),
            "SymInt": ("SymInt", f"symint({i})"), "SymInt?": ("::std::optional<SymInt>", f"opt_symint({i})"),
            "SymInt[]": ("const SymShape&", f"symints({i})"),
            "SymInt[]?": ("::std::optional<SymShape>", f"opt_symints({i})"),
            "float": ("double", f"f64({i})"), "float?": ("::std::optional<double>", f"opt_f64({i})"),
            "float[]?": ("::std::optional<::std::vector<double>>", f"opt_f64s({i})"),
            "bool": ("bool", f"b({i})"), "bool?": ("::std::optional<bool>", f"opt_b({i})"),
            "ScalarType": ("DType", f"dtype({i})"), "ScalarType?": ("::std::optional<DType>", f"opt_dtype({i})"),
            "Device?": ("::std::optional<Device>", f"opt_device({i})"),
            "str": ("const ::std::string&", f"str({i})"), "str?": ("::std::optional<::std::string>", f"opt_str({i})"),
        }[self.type]

    def arg_type(self):
        """The ops::ArgType enumerator of this argument's type (src/ops/schema.h)."""
        base = {"Tensor": "Tensor", "Tensor[]": "TensorList", "Scalar": "Scalar", "int": "Int", "int[]": "IntList",
                "SymInt": "SymInt", "SymInt[]": "SymIntList", "float": "Float", "float[]": "FloatList", "bool": "Bool",
                "ScalarType": "ScalarType", "Device": "Device", "str": "Str"}
        t = self.type
        if t == "Tensor?[]":
            return "OptTensorList"
        return ("Opt" + base[t[:-1]]) if t.endswith("?") else base[t]

    def cpp_default(self):
        d = self.default
        if d is None:
            return None
        if d == "None":
            return "{}" if self.type.startswith("Tensor") else "std::nullopt"
        if d in ("True", "False"):
            return d.lower()
        if d == "[]":
            return "{}"
        if self.type.startswith("ScalarType"):
            return f"DType::{d}"
        if self.type.startswith("str"):
            return d.replace('\\"', '"')
        if self.type == "Scalar":
            return f"Scalar({d})"
        return d


class Op:
    def __init__(self, ident, kind, family, dtype_rule, flags, schema):
        self.id, self.kind, self.family, self.dtype_rule = ident, kind, family, dtype_rule
        self.flags = {f.strip() for f in flags.split("|") if f.strip() and f.strip() != "0"}
        schema = schema.replace('\\"', '"')
        m = re.match(r'^([\w.]+)\((.*)\)\s*->\s*(.*)$', schema)
        if not m:
            raise SystemExit(f"bad schema: {schema!r}")
        self.schema = schema
        self.fname = m.group(1).split(".")[0]
        self.args = [Arg(a) for a in split_args(m.group(2)) if a.strip() != "*"]
        ret = m.group(3).strip()
        if ret == "Tensor":
            self.ret, self.nret = "Tensor", 1
        elif ret == "Tensor[]":
            self.ret, self.nret = "TensorList", -1
        else:
            n = len(split_args(ret.strip("()")))
            self.ret, self.nret = "std::tuple<" + ", ".join(["Tensor"] * n) + ">", n

    def params(self, skip_self=False, scalar_other=False, with_defaults=True):
        out = []
        tensors_seen = 0
        for a in self.args:
            if skip_self and a.name == "self":
                continue
            t = a.cpp_type()
            if a.type == "Tensor":
                tensors_seen += 1
                if scalar_other and tensors_seen == (1 if skip_self else 2):
                    t = "Scalar"
            s = f"{t} {a.name}"
            d = a.cpp_default()
            if with_defaults and d is not None:
                s += f" = {d}"
            out.append(s)
        out.append("SourceLoc loc" + (" = SourceLoc::current()" if with_defaults else ""))
        return ", ".join(out)

    def second_tensor(self):
        return [a for a in self.args if a.type == "Tensor"][1].name


def split_args(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def unbox(op):
    if op.nret == 1:
        return "ops::unbox_one(std::move(r))"
    if op.nret == -1:
        return "r"
    return f"ops::unbox_tuple<{op.nret}>(std::move(r))"


def call_body(op, self_expr="self", scalar_other=False):
    boxed = []
    for a in op.args:
        name = self_expr if a.name == "self" else a.name
        if scalar_other and a.name == op.second_tensor():
            name = f"ops::scalar_to_tensor({a.name})"
        boxed.append(f"ops::box({name})")
    return (f"  ops::CallSite site(loc);\n"
            f"  auto r = ops::call(ops::OpId::{op.id}, {{{', '.join(boxed)}}});\n"
            f"  return {unbox(op)};\n")


def generate(ops):
    h, inc, cc = [], [], []
    for op in ops:
        variants = [False] + ([True] if "SCALAR" in op.flags else [])
        for sc in variants:
            h.append(f"{op.ret} {op.fname}({op.params(scalar_other=sc)});")
            cc.append(f"{op.ret} {op.fname}({op.params(scalar_other=sc, with_defaults=False)}) {{\n"
                      f"{call_body(op, scalar_other=sc)}}}\n")
            if "METHOD" in op.flags:
                inc.append(f"{op.ret} {op.fname}({op.params(skip_self=True, scalar_other=sc)}) const;")
                cc.append(f"{op.ret} Tensor::{op.fname}({op.params(skip_self=True, scalar_other=sc, with_defaults=False)}) const {{\n"
                          f"{call_body(op, '*this', sc)}}}\n")
            if "INPLACE" in op.flags:
                inc.append(f"Tensor& {op.fname}_({op.params(skip_self=True, scalar_other=sc)});")
                fwd = ", ".join(("*this" if a.name == "self" else a.name) for a in op.args)
                cc.append(f"Tensor& Tensor::{op.fname}_({op.params(skip_self=True, scalar_other=sc, with_defaults=False)}) {{\n"
                          f"  ops::CallSite site(loc);\n"
                          f"  return ops::assign_inplace(*this, kiln::{op.fname}({fwd}, loc), \"{op.fname}_\");\n}}\n")
    header = ("// Generated by tools/codegen/gen_ops.py from src/ops/ops.def. Do not edit.\n"
              "#pragma once\n#include <kiln/tensor.h>\n\nnamespace kiln {\n\n" + "\n".join(h) + "\n\n}  // namespace kiln\n")
    methods = "// Generated by tools/codegen/gen_ops.py from src/ops/ops.def. Do not edit.\n" + "\n".join(inc) + "\n"
    source = ("// Generated by tools/codegen/gen_ops.py from src/ops/ops.def. Do not edit.\n"
              "#include <kiln/ops.h>\n\n#include \"ops/dispatch.h\"\n\nnamespace kiln {\n\n" + "\n".join(cc) +
              "\n}  // namespace kiln\n")
    return header, methods, source


# Argument names a view cannot use as accessor names as they are.
CPP_KEYWORDS = {"and", "auto", "bool", "break", "case", "char", "class", "const", "default", "delete", "do",
                "double", "else", "enum", "float", "for", "if", "int", "long", "new", "not", "operator", "or",
                "private", "public", "register", "return", "short", "signed", "static", "struct", "switch",
                "template", "this", "throw", "try", "typename", "union", "unsigned", "using", "virtual", "void",
                "while", "xor", "boxed"}


def generate_views(ops):
    """ops/args_gen.h: one struct per op over `const ops::Args&`, an accessor per schema argument.

    `ops::args::sum a{args}; a.keepdim()` reads argument 2 as a bool, as `args.b(2)` would, so the
    views cost nothing; `ops::args::of<OpId::sum>` names the view of an op in templates. An
    argument named like its op (pad's `pad`) gets a trailing underscore, since a C++ member may
    not share its class's name. The generated code spells `::std::` because `args::std` (the op
    std) would hide namespace std inside namespace args.
    """
    out = ["// Generated by tools/codegen/gen_ops.py from src/ops/ops.def. Do not edit.",
           "// Typed views of each op's boxed arguments (docs/ops.md, \"Typed argument views\"): kOp, the",
           "// op's outputs (kNumOutputs, -1 for a Tensor[]), its arguments' names and types as ops.def",
           "// spells them, and one accessor per argument.",
           "#pragma once", "#include <array>", "#include <optional>", "#include <string>", "#include <vector>", "",
           '#include "ops/dispatch.h"', '#include "ops/schema.h"', "", "namespace kiln::ops::args {", "",
           "template <OpId op>", "struct view_of;", "// The argument view of an op, for code written once for many ops.",
           "template <OpId op>", "using of = typename view_of<op>::type;", ""]
    for op in ops:
        out.append(f"struct {op.id} {{  // {op.schema}")
        out.append(f"  static constexpr OpId kOp = OpId::{op.id};")
        out.append(f"  static constexpr int kNumOutputs = {op.nret};")
        names = ", ".join(f'"{a.name}"' for a in op.args)
        types = ", ".join(f"ArgType::{a.arg_type()}" for a in op.args)
        out.append(f"  static constexpr ::std::array<const char*, {len(op.args)}> kArgNames{{{{{names}}}}};")
        out.append(f"  static constexpr ::std::array<ArgType, {len(op.args)}> kArgTypes{{{{{types}}}}};")
        out.append("  const Args& boxed;")
        for i, a in enumerate(op.args):
            if a.name in CPP_KEYWORDS:
                raise SystemExit(f"{op.id}: argument name {a.name!r} cannot be an accessor name")
            name = a.name + "_" if a.name == op.id else a.name
            ctype, read = a.view_accessor(i)
            out.append(f"  {ctype} {name}() const {{ return boxed.{read}; }}")
        out.append("};")
        out.append(f"template <>\nstruct view_of<OpId::{op.id}> {{\n  using type = {op.id};\n}};")
        out.append("")
    out.append("}  // namespace kiln::ops::args")
    return "\n".join(out) + "\n"


def write_if_changed(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as f:
        f.write(text)


def parse(path):
    ops = []
    for raw in open(path):
        line = raw.strip()
        if not line.startswith("KILN_OP("):
            continue
        m = LINE.match(line)
        if not m:
            raise SystemExit(f"{path}: cannot parse: {line}")
        ops.append(Op(*m.groups()))
    return ops


def main():
    ops_def, out = sys.argv[1], sys.argv[2]
    ops = parse(ops_def)
    header, methods, source = generate(ops)
    write_if_changed(os.path.join(out, "kiln", "ops_gen.h"), header)
    write_if_changed(os.path.join(out, "kiln", "tensor_methods_gen.inc"), methods)
    write_if_changed(os.path.join(out, "ops_gen.cc"), source)
    write_if_changed(os.path.join(out, "ops", "args_gen.h"), generate_views(ops))


if __name__ == "__main__":
    main()
