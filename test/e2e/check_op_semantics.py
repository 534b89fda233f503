#!/usr/bin/env python3
"""torch's arithmetic rules in compiled code: every loop-IR op in every dtype (the graphs of
test/e2e/op_cases.py, kept in test/snapshot/cases) on special values (signed zeros, NaN, +-inf,
huge and tiny numbers, INT_MIN/INT_MAX, -1 and 0 divisors, shift amounts past the width), compiled
for the CPU (every variant this machine runs) and, with --cuda, for CUDA run on the CPU emulation
of test/e2e/cuda_emu.h, each against the interpreter.

Positions where torch itself leaves the result undefined are not compared: integer division and
remainder by zero, float-to-integer casts of NaN, infinities and values out of the target's
range, and negative integer powers of integers. Prints one line per case and target and
`N passed, M failed`.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402
from check_cuda_emulated import emulation_source  # noqa: E402

CASES = os.path.join(ROOT, "test", "snapshot", "cases")
ROWS = 6  # s0: 6 x 37 elements, every pair of 14 special values
NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32,
      "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8,
      "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "bool": np.bool_}


def special_values(dtype):
    if dtype == "bool":
        return [False, True]
    if dtype in ("f64", "f32", "f16", "bf16"):
        big = 1e30 if dtype in ("f64", "f32", "bf16") else 6e4
        tiny = 1e-40 if dtype in ("f32", "bf16") else 1e-310 if dtype == "f64" else 1e-6
        return [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -7.0, 0.5, np.nan, np.inf, -np.inf, big,
                tiny]
    info = np.iinfo(NP[dtype])
    bits = info.bits
    return [0, 1, 2, 3, 7, bits - 1, bits, bits + 3, 100 % (info.max + 1), info.max,
            info.min, info.min + 1, info.max - 1, 5] if info.min == 0 else \
        [0, 1, -1, 2, -2, 3, -7, bits - 1, bits, bits + 3, info.min, info.max, -bits, 5]


def inputs(dtype):
    values = special_values(dtype)
    n = ROWS * 37
    xs = np.array([values[i % len(values)] for i in range(n)], dtype=object)
    ys = np.array([values[(i // len(values)) % len(values)] for i in range(n)], dtype=object)
    c = np.array([(i * 7) % 3 == 0 for i in range(n)]).reshape(ROWS, 37)
    # Divisors: the interpreter rejects integer division by zero, so integer divisors skip 0.
    zero = values[0]
    ds = np.array([v if dtype in ("f64", "f32", "f16", "bf16") or v != zero else
                   (True if dtype == "bool" else 5) for v in ys], dtype=object)

    def cast(a):
        if dtype == "bf16":
            return round_bf16(np.array(a, dtype=np.float64).astype(np.float32)).reshape(ROWS, 37)
        return np.array(list(a), dtype=NP[dtype]).reshape(ROWS, 37)
    return {"x": cast(xs), "y": cast(ys), "d": cast(ds), "c": c}


def round_bf16(x):
    return safetensors_np.bf16_to_f32(to_bf16_bits(x))


def to_bf16_bits(x):
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, np.float32))
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)


def save_inputs(path, values, dtype):
    tensors = {k: (to_bf16_bits(v) if dtype == "bf16" and k != "c" else v)
               for k, v in values.items()}
    safetensors_np.save(path, tensors, bf16=("x", "y", "d") if dtype == "bf16" else ())


def load_outputs(path):
    arrays = safetensors_np.load(path)
    kinds = safetensors_np.dtypes(path)
    return {k: (safetensors_np.bf16_to_f32(v) if kinds[k] == "BF16" else v)
            for k, v in arrays.items()}


def undefined(name, dtype, values, want):
    """Positions of output `name` whose value torch leaves undefined (not compared)."""
    x, y = values["x"], values["d"]
    shape = np.shape(want)
    none = np.zeros(shape, dtype=bool)
    if np.shape(x) != shape:
        return none
    is_int = dtype not in ("f64", "f32", "f16", "bf16", "bool")
    if is_int and re.fullmatch(r"(div|remainder|fmod)(_floor|_trunc)?", name):
        return y == 0
    if is_int and name == "pow":
        return values["y"].astype(np.float64) < 0
    m = re.fullmatch(r"to_(\w+)", name)
    if m and dtype in ("f64", "f32", "f16", "bf16") and m.group(1) not in NP or (
            m and dtype in ("f64", "f32", "f16", "bf16") and m.group(1) not in
            ("f64", "f32", "f16", "bf16", "bool")):
        info = np.iinfo(NP[m.group(1)])
        xf = x.astype(np.float64)
        with np.errstate(invalid="ignore"):
            return ~np.isfinite(xf) | (xf < info.min) | (xf >= float(info.max) + 1)
    return none


def compare(name, dtype, got, want, values):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"{name}: shape {got.shape} vs {want.shape}"
    skip = undefined(name, dtype, values, want)
    if want.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        tol = 1e-5 if want.dtype == np.float64 else 1e-4 if want.dtype == np.float32 else 1e-2
        with np.errstate(invalid="ignore"):
            ok = np.isclose(g, w, rtol=tol, atol=tol * 1e-2, equal_nan=True) | (g == w)
    else:
        ok = got == want
    ok = ok | skip
    if ok.all():
        return None
    i = int(np.argmin(ok.reshape(-1)))
    at = np.unravel_index(i, ok.shape)
    detail = ""
    if np.shape(values["x"]) == ok.shape:
        other = "d" if re.match(r"(div|remainder|fmod)", name) else "y"
        detail = f" (x={values['x'][at]!r}, {other}={values[other][at]!r})"
    return (f"{name}: {int((~ok).sum())} of {ok.size} differ; at {at}{detail}: got "
            f"{got[at]!r}, want {want[at]!r}")


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def check_cpu(args, model, inputs_path, expected, values, dtype, work):
    bundle = os.path.join(work, "cpu")
    built = run([args.tensorc, "compile", model, "-o", bundle])
    if built.returncode:
        return [f"compile: {built.stderr.strip()}"]
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    failures = []
    for variant in [v["name"] for v in manifest["cpu"]]:
        out = os.path.join(work, f"cpu-{variant}.safetensors")
        ran = run([args.tensorc, "run", bundle, "--inputs", inputs_path, "--outputs", out,
                   f"--dim=s0={ROWS}", "--variant", variant])
        if ran.returncode:
            if "does not support" in ran.stderr or "not supported by this" in ran.stderr:
                continue  # a variant this CPU cannot run
            failures.append(f"{variant}: run: {ran.stderr.strip()}")
            continue
        got = load_outputs(out)
        # Outputs by position: the bundle renames a value returned twice.
        got = dict(zip(expected, (got[o["name"]] for o in manifest["outputs"])))
        for name, want in expected.items():
            why = compare(name, dtype, got[name], want, values)
            if why:
                failures.append(f"{variant}: {why}")
    return failures


def check_cuda(args, model, expected, values, dtype, work):
    bundle = os.path.join(work, "cuda")
    built = run([args.tensorc, "compile", model, "-o", bundle, "--target", "cuda",
                 "--cuda-arch", "sm_80", "--fallback=allow"])
    if built.returncode:
        return [f"compile: {built.stderr.strip()}"]
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    if any(launch["kind"] != "kernel" for launch in manifest["launches"]):
        # Reference-kernel fallbacks and copies run on the host: leave those outputs out.
        manifest = emulable(manifest)
    kernels = open(os.path.join(bundle, "src", "kernels.cu")).read()
    source = os.path.join(work, "emulated.cpp")
    with open(source, "w") as f:
        f.write(emulation_source(kernels, manifest, {"s0": ROWS}))
    binary = os.path.join(work, "emulated")
    built = run([args.cxx, "-std=c++17", "-O1", "-w", "-fno-pie", "-no-pie", "-I", HERE, source,
                 "-o", binary])
    if built.returncode:
        return [f"building the emulation: {built.stderr[:3000]}"]
    by_name = {b["name"]: b for b in manifest["buffers"]}
    for key, value in values.items():
        if key in by_name:
            raw = to_bf16_bits(value) if dtype == "bf16" and key != "c" else value
            np.ascontiguousarray(raw).astype(raw.dtype).tofile(
                os.path.join(work, f"buf{by_name[key]['id']}.bin"))
    ran = run([binary, work, "64", "deferred", "lockstep"])
    if ran.returncode:
        return [f"emulation: {ran.stderr.strip()[:2000]}"]
    failures = []
    for index, (name, want) in enumerate(expected.items()):
        buf = next((b for b in manifest["buffers"] if b["kind"] == "output" and
                    b["index"] == index), None)
        if buf is None:
            continue
        raw = open(os.path.join(work, f"out{buf['id']}.bin"), "rb").read()
        if buf["dtype"] == "bf16":
            got = safetensors_np.bf16_to_f32(np.frombuffer(raw, np.uint16))
        else:
            got = np.frombuffer(raw, NP[buf["dtype"]])
        why = compare(name, dtype, got.reshape(np.shape(want)), want, values)
        if why:
            failures.append(why)
    return failures


def emulable(manifest):
    """The manifest without launches the emulation cannot run (fallbacks, copies) and without
    the outputs they write."""
    manifest = dict(manifest)
    dropped = set()
    kept = []
    for launch in manifest["launches"]:
        if launch["kind"] == "kernel":
            kept.append(launch)
        else:
            dropped.update(launch["args"])
    manifest["launches"] = kept
    manifest["buffers"] = [dict(b, kind="dropped") if b["id"] in dropped and b["kind"] == "output"
                           else b for b in manifest["buffers"]]
    return manifest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--cuda", action="store_true", help="also CUDA on the CPU emulation")
    parser.add_argument("--cxx", default="c++")
    parser.add_argument("--filter", default="", help="only cases whose name matches")
    parser.add_argument("--work", help="keep the cases' files here")
    args = parser.parse_args()
    names = sorted(n[:-3] for n in os.listdir(CASES) if n.endswith(".fx") and
                   re.search(args.filter, n))
    failed = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            dtype = name.split("_", 1)[1]
            work = os.path.join(args.work or tmp, name)
            os.makedirs(work, exist_ok=True)
            model = os.path.join(CASES, name + ".fx")
            values = inputs(dtype)
            inputs_path = os.path.join(work, "inputs.safetensors")
            save_inputs(inputs_path, values, dtype)
            reference = os.path.join(work, "expected.safetensors")
            ran = run([args.tensorc, "run", model, "--interp", "--inputs", inputs_path,
                       "--outputs", reference, f"--dim=s0={ROWS}"])
            if ran.returncode:
                print(f"FAIL {name}: interpreter: {ran.stderr.strip()}")
                failed += 1
                total += 1
                continue
            outputs = load_outputs(reference)
            returned = re.search(r"return \((.*)\)", open(model).read()).group(1)
            expected = {n.strip()[1:]: outputs[n.strip()[1:]] for n in returned.split(",") if n.strip()}
            targets = [("cpu", lambda: check_cpu(args, model, inputs_path, expected, values,
                                                 dtype, work))]
            if args.cuda:
                targets.append(("cuda", lambda: check_cuda(args, model, expected, values, dtype,
                                                           work)))
            for target, check in targets:
                total += 1
                failures = check()
                failed += bool(failures)
                print(f"{'FAIL' if failures else 'ok'} {name} {target}", flush=True)
                for failure in failures[:12]:
                    print(f"    {failure}")
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
