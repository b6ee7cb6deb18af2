#!/usr/bin/env python3
"""Generates kiln's public op functions and Tensor methods from src/ops/ops.def.

Usage: gen_ops.py OPS_DEF OUT_DIR
Writes OUT_DIR/kiln/ops_gen.h (free functions), OUT_DIR/kiln/tensor_methods_gen.inc (method
declarations, included inside class Tensor) and OUT_DIR/ops_gen.cc (their definitions, each
boxing its arguments and calling the dispatcher). Files are rewritten only when they change.
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
        if self.name in ("min", "max", "std"):  # fine as C++ parameter names, kept as is
            pass

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
    header, methods, source = generate(parse(ops_def))
    write_if_changed(os.path.join(out, "kiln", "ops_gen.h"), header)
    write_if_changed(os.path.join(out, "kiln", "tensor_methods_gen.inc"), methods)
    write_if_changed(os.path.join(out, "ops_gen.cc"), source)


if __name__ == "__main__":
    main()
