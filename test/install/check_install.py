#!/usr/bin/env python3
"""The install tree, checked from the outside: `cmake --install` into a prefix that is then moved
elsewhere (so nothing may depend on where it was installed), then

  - the layout, no build-tree or staging paths in the installed text files, and a runtime library
    linking none of LLVM, protobuf, ONNX, spdlog or fmt;
  - every installed header compiles on its own against the installed include directory alone;
  - the installed driver compiles models/ln_silu.fx to a bundle and to a model library;
  - examples/consumer configured with find_package(tensorc_runtime) against the moved prefix,
    built shared and static, and run; the same program and the C example built with the flags of
    `pkg-config --cflags --libs tensorc_runtime`; all against the interpreter's outputs;
  - (--python) the installed Python package loads the bundle and the library.

    check_install.py --build BUILD --work DIR [--python]
"""
import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))
import safetensors_np  # noqa: E402

FORBIDDEN_LIBRARIES = ("LLVM", "protobuf", "onnx", "spdlog", "fmt")


def run(args, env=None, cwd=None):
    result = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    if result.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(map(str, args))}\n{result.stdout}")
    return result.stdout


def check(condition, message):
    if not condition:
        raise SystemExit(f"FAILED: {message}")


def needed(path):
    return [line.split("[")[1].rstrip("]") for line in run(["readelf", "-d", path]).splitlines()
            if "(NEEDED)" in line]


def run_path(path):
    return [line for line in run(["readelf", "-d", path]).splitlines()
            if "(RPATH)" in line or "(RUNPATH)" in line]


def check_layout(prefix, build, staging):
    libdir = os.path.dirname(os.path.dirname(
        glob.glob(os.path.join(prefix, "**/pkgconfig/tensorc_runtime.pc"), recursive=True)[0]))
    for path in ("bin/tensorc", "bin/tensorc-run", "include/tensorc/tensorc.h",
                 "include/tensorc/Runtime/Model.h"):
        check(os.path.isfile(os.path.join(prefix, path)), f"{path} is not installed")
    for path in ("libtensorc_rt.a", "libtensorc_rt.so",
                 "cmake/tensorc_runtime/tensorc_runtimeConfig.cmake"):
        check(os.path.exists(os.path.join(libdir, path)), f"{path} is not in {libdir}")
    shared = os.path.realpath(os.path.join(libdir, "libtensorc_rt.so"))
    for binary in (shared, os.path.join(prefix, "bin/tensorc-run")):
        bad = [lib for lib in needed(binary) if any(f in lib for f in FORBIDDEN_LIBRARIES)]
        check(not bad, f"{binary} links {bad}")
    check(not run_path(shared), f"{shared} has a run path: {run_path(shared)}")
    # Text files must not name where tensorc was built or first installed.
    for root, _, files in os.walk(prefix):
        for name in files:
            path = os.path.join(root, name)
            if not name.endswith((".cmake", ".pc", ".py", ".h")):
                continue
            with open(path, errors="replace") as f:
                text = f.read()
            for where in (build, REPO, staging):
                check(where not in text, f"{path} names {where}")
    return libdir


def check_headers(prefix, work, cc, cxx):
    """Each installed header alone in a translation unit, C++17, and tensorc.h as C99."""
    include = os.path.join(prefix, "include")
    sources = []
    for header in sorted(glob.glob(os.path.join(include, "tensorc/**/*.h"), recursive=True)):
        relative = os.path.relpath(header, include)
        source = os.path.join(work, "headers", relative.replace("/", "_") + ".cpp")
        os.makedirs(os.path.dirname(source), exist_ok=True)
        with open(source, "w") as f:
            f.write(f"#include <{relative}>\n")
        sources.append(source)
    check(len(sources) >= 10, f"only {len(sources)} headers installed")
    run([cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", include,
         *sources])
    c_source = os.path.join(work, "headers", "c_abi.c")
    with open(c_source, "w") as f:
        f.write("#include <tensorc/tensorc.h>\n")
    run([cc, "-std=c99", "-pedantic", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I",
         include, c_source])
    return len(sources)


def compare(name, got, expected, exact=None):
    for key, value in expected.items():
        check(key in got, f"{name}: no output '{key}'")
        check(got[key].shape == value.shape, f"{name}: '{key}' is {got[key].shape}, "
                                             f"expected {value.shape}")
        if not np.allclose(got[key], value, rtol=1e-3, atol=1e-5):
            raise SystemExit(f"FAILED: {name}: '{key}' differs from the interpreter by "
                             f"{np.max(np.abs(got[key] - value))}")
        if exact is not None:
            check(np.array_equal(got[key].view(np.uint8), exact[key].view(np.uint8)),
                  f"{name}: '{key}' is not bit-identical to tensorc-run's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="the build tree to install")
    parser.add_argument("--work", required=True, help="scratch directory (emptied first)")
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--generator", default="Ninja")
    parser.add_argument("--cc", default="cc")
    parser.add_argument("--cxx", default="c++")
    parser.add_argument("--python", action="store_true", help="check the Python package too")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    staging = os.path.join(work, "staging")
    prefix = os.path.join(work, "moved prefix")  # a space: quoting mistakes show
    run([args.cmake, "--install", build, "--prefix", staging])
    os.rename(staging, prefix)
    libdir = check_layout(prefix, build, staging)
    headers = check_headers(prefix, work, args.cc, args.cxx)

    # The installed driver; the build tree's interpreter is the oracle.
    tensorc = os.path.join(prefix, "bin/tensorc")
    model = os.path.join(REPO, "models/ln_silu.fx")
    bundle = os.path.join(work, "ln_silu")
    library = os.path.join(work, "ln_silu.so")
    run([tensorc, "compile", model, "-o", bundle])
    run([tensorc, "compile", model, "-o", library, "--emit=so"])
    inputs = os.path.join(work, "x.safetensors")
    x = np.random.default_rng(5).uniform(-1, 1, (3, 128)).astype(np.float32)
    safetensors_np.save(inputs, {"x": x})
    run([os.path.join(build, "tools/tensorc/tensorc"), "run", model, "--interp", "--inputs",
         inputs, "--outputs", os.path.join(work, "interp.safetensors")])
    expected = safetensors_np.load(os.path.join(work, "interp.safetensors"))
    run([os.path.join(prefix, "bin/tensorc-run"), bundle, "--inputs", inputs, "--outputs",
         os.path.join(work, "run.safetensors")])
    exact = safetensors_np.load(os.path.join(work, "run.safetensors"))
    compare("tensorc-run", exact, expected)

    # find_package against the moved prefix.
    consumer = os.path.join(work, "consumer")
    run([args.cmake, "-S", os.path.join(REPO, "examples/consumer"), "-B", consumer, "-G",
         args.generator, f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_C_COMPILER={args.cc}",
         f"-DCMAKE_CXX_COMPILER={args.cxx}", "-DCMAKE_BUILD_TYPE=Release"])
    run([args.cmake, "--build", consumer])
    shared = os.path.join(consumer, "run_model")
    static = os.path.join(consumer, "run_model_static")
    check(any(lib.startswith("libtensorc_rt.so") for lib in needed(shared)),
          "run_model does not link libtensorc_rt.so")
    check(os.path.join(prefix, "lib") in run(["ldd", shared]), "run_model does not load the "
          "installed libtensorc_rt.so")
    check(not any("tensorc" in lib for lib in needed(static)), "run_model_static links a "
          "shared tensorc library")
    for program in (shared, static):
        outputs = os.path.join(work, os.path.basename(program) + ".safetensors")
        run([program, bundle, inputs, outputs])
        compare(os.path.basename(program), safetensors_np.load(outputs), expected, exact)
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    expected_info = [f"{kind} {d['name']} {d['dtype']} [" +
                     ", ".join(str(s) if isinstance(s, int) else "-1" for s in d["shape"]) + "]"
                     for kind in ("input", "output") for d in manifest[kind + "s"]]
    info = run([os.path.join(consumer, "model_info"), bundle]).splitlines()
    check(info == expected_info, f"model_info printed {info}, expected {expected_info}")

    # pkg-config, from the same moved prefix.
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
    flags = shlex.split(run(["pkg-config", "--cflags", "--libs", "tensorc_runtime"], env=env))
    check(f"-I{os.path.join(prefix, 'include')}" in
          ["-I" + os.path.normpath(f[2:]) for f in flags if f.startswith("-I")],
          f"pkg-config --cflags points elsewhere: {flags}")
    rpath = f"-Wl,-rpath,{libdir}"
    pc_program = os.path.join(work, "run_model_pkgconfig")
    run([args.cxx, "-std=c++17", os.path.join(REPO, "examples/consumer/run_model.cpp"), *flags,
         rpath, "-o", pc_program])
    outputs = os.path.join(work, "pkgconfig.safetensors")
    run([pc_program, bundle, inputs, outputs])
    compare("run_model (pkg-config)", safetensors_np.load(outputs), expected, exact)
    c_program = os.path.join(work, "model_info_pkgconfig")
    run([args.cc, "-std=c99", os.path.join(REPO, "examples/consumer/model_info.c"), *flags, rpath,
         "-o", c_program])
    info = run([c_program, bundle]).splitlines()
    check(info == expected_info, f"model_info (pkg-config) printed {info}")

    checked = f"{headers} headers, find_package shared and static, pkg-config C++ and C"
    if args.python:
        site = glob.glob(os.path.join(prefix, "**/site-packages"), recursive=True)[0]
        script = (
            "import sys, numpy as np, tensorc\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import safetensors_np\n"
            "assert tensorc.__file__.startswith(sys.argv[2]), tensorc.__file__\n"
            "assert tensorc.compiler_path().startswith(sys.argv[2]), tensorc.compiler_path()\n"
            "x = safetensors_np.load(sys.argv[3])['x']\n"
            "for i, path in enumerate(sys.argv[4:6]):\n"
            "    (y,) = tensorc.load(path).run(x)\n"
            "    safetensors_np.save(sys.argv[6] + str(i), {'silu3': y})\n")
        run([sys.executable, "-c", script, os.path.join(REPO, "models"), prefix, inputs, bundle,
             library, os.path.join(work, "python")],
            env=dict(os.environ, PYTHONPATH=site, TENSORC_COMPILER=""))
        for i in range(2):
            got = safetensors_np.load(os.path.join(work, f"python{i}"))
            compare("python " + ("bundle", "library")[i], got, expected, exact)
        checked += ", the Python package"
    print(f"install: passed ({checked}; prefix moved after install)")


if __name__ == "__main__":
    main()
