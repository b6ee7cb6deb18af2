#!/usr/bin/env python3
"""The layering check: no file of kiln's library includes a header of a layer above its own.

Data flows one way through the layers (docs/architecture.md). This script holds THE table of
layers (LAYERS below; nothing else restates the order: CMake reads the component names from
`--components`), maps every include of every file under src/ and include/kiln/ (and the
generated API under --gen) to a layer and prints each include that goes up, as

    src/decomp/reduction.cc:5: decomp includes "autograd/derivatives/common.h" (autograd): ...

Exit status: 0 when every include goes down or stays inside its component, 1 on any violation
(or an include it cannot place), 2 on bad usage.

    python3 tools/check_layers.py [--root DIR] [--gen BUILD/gen]   # the check (ctest: layering)
    python3 tools/check_layers.py --self-test                       # proves a planted include fails it
    python3 tools/check_layers.py --components                      # the src/ components, for CMake
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Lowest first. Each entry: the components (folders of src/) of one layer, whether they may include
# each other, and what the layer is. A file may include its own component, any component of a lower
# layer, and (only where the flag says so) the other components of its layer.
LAYERS = [
    (("runtime", "sym", "scalar"), False,
     "devices and their memory; symbolic integers; the pointwise prims' scalar semantics (host + device)"),
    (("core",), False, "Tensor, Storage, dtypes, errors, logs, RNG"),
    (("ops",), False, "ops.def, schemas, meta functions, the dispatcher, fake mode, autocast"),
    (("tile",), False, "the tile kernel IR (kiln's Triton): builder, verifier, text form, passes, C++ backend"),
    (("decomp", "eager"), False, "composites as prims; the reference CPU kernels (independent of each other)"),
    (("autograd",), False, "derivative formulas and the engine"),
    (("nn", "optim", "io"), True, "modules, optimizers, safetensors"),
    (("graph",), False, "the graph IR, its passes and interpreter"),
    (("capture",), False, "compile()'s tracer, guards, engine, lazy mode"),
    (("aot",), False, "functionalize, joint graph, partition, the aot runtime"),
    (("inductor",), False, "the code generator: loop IR, lowering, fusion, tile kernels, the executable plan"),
    (("compile",), False, "the driver above capture and aot: backends, training-step stitching"),
]
# Code outside the library may include anything.
TOP = ("python", "tools", "tests", "bench", "examples")

# Public headers count as the layer that implements them (a prefix ending in "/" covers a folder).
# "base" headers (errors, dtypes, devices, SymInt, logs) may be included from every layer.
PUBLIC = {
    "kiln/error.h": "base",
    "kiln/dtype.h": "base",
    "kiln/device.h": "base",
    "kiln/symint.h": "base",
    "kiln/log.h": "base",
    "kiln/cuda.h": "runtime",
    "kiln/tensor.h": "core",
    "kiln/grad_mode.h": "core",
    "kiln/tensor_methods_gen.inc": "core",  # generated; the Tensor methods tensor.h declares
    "kiln/ops.h": "ops",
    "kiln/ops_gen.h": "ops",  # generated from ops.def
    "kiln/autocast.h": "ops",
    "kiln/autograd.h": "autograd",
    "kiln/nn.h": "nn",
    "kiln/nn/": "nn",
    "kiln/optim.h": "optim",
    "kiln/io.h": "io",
    "kiln/compile/capture.h": "capture",  # the part of compile.h capture implements
    "kiln/compile.h": "compile",
    "kiln/aot.h": "aot",
    "kiln/kiln.h": "top",
}
# Generated sources (under --gen) and the component they belong to.
GENERATED_SOURCES = {"ops_gen.cc": "ops", "ops/args_gen.h": "ops"}

SOURCE_SUFFIXES = (".h", ".cc", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')

RANK = {c: i for i, (comps, _, _) in enumerate(LAYERS) for c in comps}
SIBLINGS_OK = {c: ok for comps, ok, _ in LAYERS for c in comps}
RANK["base"] = -1
RANK["top"] = len(LAYERS)


def order_text():
    return " < ".join(", ".join(comps) for comps, _, _ in LAYERS)


def public_layer(path):
    """The layer of a public header <path>, or None if the table does not list it."""
    if path in PUBLIC:
        return PUBLIC[path]
    for prefix, layer in PUBLIC.items():
        if prefix.endswith("/") and path.startswith(prefix):
            return layer
    return None


def include_layer(kind, path):
    """(layer, None) for an include, (None, None) for a system header, (None, why) if unplaceable."""
    if kind == "<":
        if not path.startswith("kiln/"):
            return None, None  # the standard library, system and third-party headers
        layer = public_layer(path)
        return (layer, None) if layer else (None, "a public header missing from the table in tools/check_layers.py")
    if "/" not in path:
        return None, 'a quoted include must name its component ("ops/dispatch.h", not "dispatch.h")'
    component = path.split("/", 1)[0]
    if component in RANK and component not in ("base", "top"):
        return component, None
    return None, f"src/{component}/ is in no layer (add it to LAYERS in tools/check_layers.py)"


def check_file(rel, text, own):
    """Violations of one file whose component (or public-header layer) is `own`."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = INCLUDE_RE.match(line)
        if not m:
            continue
        kind, path = m.groups()
        shown = f'"{path}"' if kind == '"' else f"<{path}>"
        layer, why = include_layer(kind, path)
        if why:
            out.append(f"{rel}:{lineno}: {own} includes {shown}: {why}")
            continue
        if layer is None or layer == own or layer == "base":
            continue
        if RANK[layer] < RANK[own]:
            continue
        if RANK[layer] == RANK[own] and SIBLINGS_OK.get(own):
            continue
        if RANK[layer] == RANK[own]:
            reason = f"{own} and {layer} are siblings that must not include each other"
        elif layer == "top":
            reason = "only code outside the library may include the umbrella header"
        else:
            reason = f"{layer} is above {own}"
        out.append(f"{rel}:{lineno}: {own} includes {shown} ({layer}): {reason}")
    return out


def files_to_check(root, gen):
    """(shown path, absolute path, layer) of every file the check reads."""
    found = []
    src = os.path.join(root, "src")
    for entry in sorted(os.listdir(src)):
        base = os.path.join(src, entry)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(SOURCE_SUFFIXES):
                    p = os.path.join(dirpath, f)
                    found.append((os.path.relpath(p, root), p, entry))
    for top, under in [(os.path.join(root, "include"), "include"), (gen, None)]:
        if not top or not os.path.isdir(os.path.join(top, "kiln")):
            continue
        for dirpath, dirnames, filenames in os.walk(os.path.join(top, "kiln")):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(SOURCE_SUFFIXES):
                    p = os.path.join(dirpath, f)
                    shown = os.path.relpath(p, root) if under else p
                    found.append((shown, p, public_layer(os.path.relpath(p, top)) or "?"))
    if gen:
        for f, layer in GENERATED_SOURCES.items():
            p = os.path.join(gen, f)
            if os.path.isfile(p):
                found.append((p, p, layer))
    return found


def run_check(root, gen):
    if not os.path.isdir(os.path.join(root, "src")):
        print(f"check_layers: no src/ under {root}", file=sys.stderr)
        return 2
    if gen and not os.path.isdir(gen):
        print(f"check_layers: the generated directory {gen} does not exist (build first)", file=sys.stderr)
        return 2
    violations = []
    files = files_to_check(root, gen)
    for shown, path, layer in files:
        if layer == "?":
            violations.append(f"{shown}: a public header missing from the table in tools/check_layers.py")
            continue
        if layer not in RANK:
            violations.append(f"{shown}: src/{layer}/ is not a component of any layer (add it to LAYERS)")
            continue
        with open(path, encoding="utf-8") as fh:
            violations += check_file(shown, fh.read(), layer)
    for v in violations:
        print(v)
    if violations:
        print(f"layering: {len(violations)} violation(s) in {len({v.split(':')[0] for v in violations})} file(s) "
              f"of {len(files)} checked; an include may only go down: {order_text()} (docs/architecture.md)")
        return 1
    print(f"layering: OK ({len(files)} files; order: {order_text()})")
    return 0


def self_test():
    """Runs the check on a copy of a few real files: clean it passes, each planted include fails it."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    picks = ["src/sym/expr.h", "src/graph/graph.h", "src/eager/cpu/loops.h", "include/kiln/tensor.h"]
    plants = [  # (file, include, what must be reported)
        ("src/graph/graph.h", '#include "capture/tracer.h"', "graph includes \"capture/tracer.h\" (capture): capture is above graph"),
        ("src/sym/expr.h", "#include <kiln/compile.h>", "sym includes <kiln/compile.h> (compile): compile is above sym"),
        ("src/eager/cpu/loops.h", '#include "decomp/nn.h"', "eager and decomp are siblings"),
        ("include/kiln/tensor.h", "#include <kiln/autograd.h>", "core includes <kiln/autograd.h> (autograd)"),
        ("src/graph/graph.h", '#include "fuser/lower.h"', "src/fuser/ is in no layer"),
    ]

    def check(tree):
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", tree], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in picks:
            os.makedirs(os.path.dirname(os.path.join(tmp, p)), exist_ok=True)
            shutil.copy(os.path.join(repo, p), os.path.join(tmp, p))
        rc, out = check(tmp)
        print(f"clean copy of {len(picks)} files: exit {rc}\n  {out.strip()}")
        if rc != 0:
            failures.append("the clean copy failed the check")
        for rel, line, expect in plants:
            path = os.path.join(tmp, rel)
            with open(path, encoding="utf-8") as fh:
                original = fh.read()
            lines = original.splitlines(keepends=True)
            at = next(i for i, l in enumerate(lines) if l.startswith("#include")) + 1
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("".join(lines[:at] + [line + "\n"] + lines[at:]))
            rc, out = check(tmp)
            where = f"{rel}:{at + 1}:"
            ok = rc == 1 and any(l.startswith(where) and expect in l for l in out.splitlines())
            print(f"planted {line} at {where} exit {rc} ({'reported' if ok else 'NOT reported'})\n  {out.strip()}")
            if not ok:
                failures.append(f"{line} in {rel} was not reported as expected ({expect})")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(original)
    for f in failures:
        print(f"self-test FAILED: {f}")
    print("self-test: " + ("FAILED" if failures else f"OK ({len(plants)} planted includes each failed the check)"))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description="kiln's layering check (docs/architecture.md)")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the source tree (default: this script's repository)")
    ap.add_argument("--gen", help="the generated API's directory (build/gen), checked as well")
    ap.add_argument("--self-test", action="store_true", help="show that planted upward includes fail the check")
    ap.add_argument("--components", action="store_true", help="print the src/ components, lowest layer first")
    args = ap.parse_args()
    if args.components:
        print(";".join(c for comps, _, _ in LAYERS for c in comps))
        return 0
    if args.self_test:
        return self_test()
    return run_check(os.path.abspath(args.root), args.gen and os.path.abspath(args.gen))


if __name__ == "__main__":
    sys.exit(main())
