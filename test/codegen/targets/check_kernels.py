#!/usr/bin/env python3
"""The generated GEMM and convolution kernels through the compiler's back end, per CPU target:
tensorc-emit-test-kernels compiles the cases of KernelCases.h into a shared object (O3, object,
ld.lld), and kernel_harness runs them against plain C++ loops: natively for the x86-64 variants
this host supports, and for aarch64 (NEON) with a harness cross-built by aarch64-linux-gnu-g++
and run under qemu-aarch64. The aarch64 part is skipped when the cross compiler or qemu is
missing (exit 77 when nothing could run).

    check_kernels.py --emit build/test/tensorc-emit-test-kernels \
        --harness build/test/kernel_harness --source-dir . --work-dir build/kernel-targets
"""
import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77


def host_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def run_case(label, emit, target, harness_cmd, work):
    library = os.path.join(work, target + ".so")
    subprocess.run([emit, target, library], check=True)
    result = subprocess.run(harness_cmd + [library], capture_output=True, text=True)
    print("== %s (%s)" % (target, label))
    print(result.stdout.rstrip())
    if result.returncode != 0:
        print(result.stderr.rstrip())
    return result.returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emit", required=True)
    parser.add_argument("--harness", required=True, help="the native harness")
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--cross-cxx", default="aarch64-linux-gnu-g++")
    parser.add_argument("--qemu", default="qemu-aarch64")
    parser.add_argument("--sysroot", default="/usr/aarch64-linux-gnu")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    ok, ran = True, 0
    flags = host_flags()
    if os.uname().machine == "x86_64":
        targets = ["x86_64"] if {"avx2", "fma"} <= flags else []
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
            targets.append("x86_64-avx512")
        for target in targets:
            ok &= run_case("native", args.emit, target, [args.harness], args.work_dir)
            ran += 1
    cross, qemu = shutil.which(args.cross_cxx), shutil.which(args.qemu)
    if cross and qemu and os.path.isdir(args.sysroot):
        here = os.path.dirname(os.path.abspath(__file__))
        harness = os.path.join(args.work_dir, "kernel_harness-aarch64")
        subprocess.run([cross, "-std=c++20", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-I", os.path.join(args.source_dir, "include"), "-I", here,
                        os.path.join(here, "kernel_harness.cpp"),
                        os.path.join(args.source_dir, "lib", "Codegen", "CPU",
                                     "WeightPacking.cpp"),
                        "-ldl", "-o", harness], check=True)
        ok &= run_case("qemu", args.emit, "aarch64", [qemu, "-L", args.sysroot, harness],
                       args.work_dir)
        ran += 1
    else:
        print("aarch64 skipped: needs %s, %s and %s" % (args.cross_cxx, args.qemu, args.sysroot))
    if not ran:
        return SKIP
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
