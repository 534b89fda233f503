#!/usr/bin/env python3
"""Cross-builds the runtime for aarch64, runs aarch64 bundles under qemu-aarch64 and compares
them with the x86 interpreter.

Steps:
  1. Configure (once) and build `tensorc-run` with -DTENSORC_RUNTIME_ONLY=ON and
     cmake/aarch64-linux-gnu.cmake into --build-dir; later runs are incremental (and ccache'd).
  2. `tensorc compile MODEL --cpu-arch aarch64` for each model of MODELS (ln_silu also as a
     two-architecture bundle, to check that the aarch64 runtime picks its variant).
  3. Run each bundle with the aarch64 tensorc-run under `qemu-aarch64 -L SYSROOT`, on random
     inputs (fixed seed and dims), and the model with `tensorc run --interp` on the same seed and
     dims (both tools share the input generator); compare at rtol 1e-3 / atol 1e-5.
  4. The x86 runtime refuses an aarch64-only bundle, naming both architectures.
Exits 77 (CTest's SKIP_RETURN_CODE for this test) when the cross compiler or qemu is missing.
"""
import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

SKIP = 77
SEED = 11
# Model -> dims for the random inputs. The MLP (1024-4096-4096-1024) runs a batch of 2 to keep the
# emulated run short.
MODELS = {"mlp": {"s0": 2}, "ln_silu": {"s0": 8}, "convnet": {"s0": 2}, "resblock": {"s0": 2}}
CPU_LIBS = {"x86_64": ["x86_64.so", "x86_64-avx512.so"], "aarch64": ["aarch64.so"]}
REFUSAL = "bundle has CPU code for aarch64 only, this machine is x86_64"


def elf_machine(path):
    """e_machine of an ELF file (183 is EM_AARCH64)."""
    with open(path, "rb") as f:
        header = f.read(20)
    return int.from_bytes(header[18:20], "little") if header[:4] == b"\x7fELF" else None


def cross_build(args):
    """Configures (first time only) and builds the aarch64 tensorc-run; returns its path."""
    if not os.path.exists(os.path.join(args.build_dir, "CMakeCache.txt")):
        configure = [args.cmake, "-S", args.source_dir, "-B", args.build_dir, "-G", args.generator,
                     "-DCMAKE_BUILD_TYPE=Release", "-DTENSORC_RUNTIME_ONLY=ON",
                     "-DCMAKE_TOOLCHAIN_FILE=" + os.path.join(args.source_dir, "cmake",
                                                              "aarch64-linux-gnu.cmake"),
                     "-DTENSORC_AARCH64_SYSROOT=" + args.sysroot]
        if args.make_program:
            configure.append("-DCMAKE_MAKE_PROGRAM=" + args.make_program)
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    start = time.monotonic()
    build = subprocess.run([args.cmake, "--build", args.build_dir, "--target", "tensorc-run",
                            "-j", str(os.cpu_count() or 2)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if build.returncode != 0:
        sys.stdout.write(build.stdout)
        raise RuntimeError(f"cross build in {args.build_dir} failed")
    print(f"cross build of tensorc-run in {args.build_dir}: {time.monotonic() - start:.1f} s")
    runner = os.path.join(args.build_dir, "runtime", "tensorc-run")
    if elf_machine(runner) != 183:
        raise RuntimeError(f"{runner} is not an aarch64 executable")
    return runner


def compare(label, got, want):
    """Returns a failure message or None; prints the figures either way."""
    if set(got) != set(want):
        return f"{label}: outputs {sorted(got)}, interpreter gave {sorted(want)}"
    failures = []
    for name, ref in want.items():
        out = got[name]
        if out.shape != ref.shape or out.dtype != ref.dtype:
            failures.append(f"{label} {name}: got {out.dtype}{list(out.shape)}, "
                            f"want {ref.dtype}{list(ref.shape)}")
            continue
        ref64 = ref.astype(np.float64)
        err = np.abs(out.astype(np.float64) - ref64)
        bad = err > 1e-5 + 1e-3 * np.abs(ref64)
        rel = (err / np.maximum(np.abs(ref64), 1e-30)).max() if err.size else 0.0
        print(f"{label} {name}: {list(out.shape)} max abs err {err.max():.3g}, max rel err "
              f"{rel:.3g}, {int(bad.sum())} of {bad.size} elements outside rtol 1e-3 / atol 1e-5")
        if bad.any():
            failures.append(f"{label} {name}: mismatch")
    return "; ".join(failures) or None


def check_model(args, runner, qemu, name, archs, tmp):
    dims = MODELS[name]
    model = os.path.join(args.models_dir, f"{name}.fx")
    bundle = os.path.join(tmp, f"{name}-{archs.replace(',', '-')}")
    subprocess.run([args.tensorc, "compile", model, "-o", bundle, "--cpu-arch", archs],
                   check=True, stderr=subprocess.DEVNULL)
    have = sorted(os.listdir(os.path.join(bundle, "cpu")))
    want = sorted(lib for arch in archs.split(",") for lib in CPU_LIBS[arch])
    if have != want:
        return f"{name} ({archs}): bundle cpu/ holds {have}, expected {want}"

    dim_flags = [flag for symbol, size in dims.items() for flag in ("--dim", f"{symbol}={size}")]
    emulated = os.path.join(tmp, f"{name}-aarch64.safetensors")
    start = time.monotonic()
    run = subprocess.run(qemu + [runner, bundle, "--random-inputs", str(SEED), *dim_flags,
                                 "--outputs", emulated], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - start
    if run.returncode != 0:
        return f"{name} ({archs}) under qemu: exit {run.returncode}: {run.stderr.strip()}"
    if "variant aarch64," not in run.stdout:
        return f"{name} ({archs}) under qemu did not pick the aarch64 variant: {run.stdout}"

    reference = os.path.join(tmp, f"{name}-interp.safetensors")
    subprocess.run([args.tensorc, "run", model, "--interp", "--random-inputs", str(SEED),
                    *dim_flags, "--outputs", reference], check=True, stdout=subprocess.DEVNULL)
    label = f"{name} [{archs}] {' '.join(f'{k}={v}' for k, v in dims.items())} " \
            f"(qemu {seconds:.1f} s) vs interp:"
    return compare(label, safetensors_np.load(emulated), safetensors_np.load(reference))


def check_refusal(args, tmp):
    """The host runtime (tensorc-run and `tensorc run`) names the bundle's and the host's arch."""
    bundle = os.path.join(tmp, "ln_silu-aarch64")
    if not os.path.isdir(bundle):
        subprocess.run([args.tensorc, "compile", os.path.join(args.models_dir, "ln_silu.fx"),
                        "-o", bundle, "--cpu-arch", "aarch64"], check=True,
                       stderr=subprocess.DEVNULL)
    failures = []
    for tool, command in (("tensorc-run", [args.tensorc_run, bundle]),
                          ("tensorc run", [args.tensorc, "run", bundle])):
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if run.returncode == 0 or REFUSAL not in run.stderr:
            failures.append(f"{tool} on an aarch64-only bundle: exit {run.returncode}, "
                            f"stderr {run.stderr.strip()!r}, expected {REFUSAL!r}")
        else:
            print(f"x86 {tool} refuses the aarch64-only bundle: {run.stderr.strip()}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tensorc", required=True, help="host tensorc (compiler, interpreter)")
    parser.add_argument("--tensorc-run", required=True, help="host runtime-only tool")
    parser.add_argument("--source-dir", default=ROOT)
    parser.add_argument("--build-dir", required=True, help="aarch64 runtime build directory")
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--generator", default="Ninja")
    parser.add_argument("--make-program", default="")
    parser.add_argument("--cross-cxx", default="aarch64-linux-gnu-g++")
    parser.add_argument("--qemu", default="qemu-aarch64")
    parser.add_argument("--sysroot", default="/usr/aarch64-linux-gnu")
    parser.add_argument("--models-dir", default=os.path.join(ROOT, "models"))
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    args = parser.parse_args()

    for tool, package in ((args.cross_cxx, "g++-aarch64-linux-gnu"), (args.qemu, "qemu-user")):
        if not shutil.which(tool):
            print(f"SKIP: {tool} not found (Debian package {package})")
            return SKIP
    if not os.path.isdir(args.sysroot):
        print(f"SKIP: no aarch64 libraries in {args.sysroot}")
        return SKIP

    runner = cross_build(args)
    qemu = [shutil.which(args.qemu), "-L", args.sysroot]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.model or sorted(MODELS):
            failures.append(check_model(args, runner, qemu, name, "aarch64", tmp))
        # A bundle for both architectures: the aarch64 runtime must choose cpu/aarch64.so.
        failures.append(check_model(args, runner, qemu, "ln_silu", "x86_64,aarch64", tmp))
        if platform.machine() == "x86_64":
            failures.extend(check_refusal(args, tmp))
    failures = [f for f in failures if f]
    for failure in failures:
        print("FAIL:", failure)
    print("aarch64 bundles under qemu match the interpreter" if not failures else
          "aarch64 bundles under qemu do NOT match the interpreter")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
