#!/usr/bin/env python3
"""Hostile bundles and runner options (issue 12): each case must fail in both runners (`tensorc
run` and the runtime-only `tensorc-run`) with one plain line naming the buffer, launch, file,
option or input at fault, exit status 1, no signal, nothing on stdout, no --outputs file written,
within 10 s. Also: a compile interrupted by SIGTERM or SIGINT while it links leaves no
temporaries (no OUT, no .OUT.tmp-*, nothing in TMPDIR), and one killed by SIGKILL leaves a
staging directory that the next compile into the same output removes.

The bundle is compiled here from a small ONNX model (y = relu(x) + w, x: f32[N, 64]) for x86_64
and aarch64; each case copies it and edits the copy (the manifest's digests are updated where a
case replaces a file on purpose, so that the check under test is the one that fires).
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.join(ROOT, "test", "onnx"))
import safetensors_np  # noqa: E402
from check_malformed import error_problems  # noqa: E402

LIMIT_SECONDS = 10


def make_model(path, nodes=None, inits=None, x_shape=("N", 64)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    if nodes is None:
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "w"], ["y"])]
        inits = [numpy_helper.from_array(np.linspace(-1, 1, 64, dtype=np.float32), "w")]
    graph = helper.make_graph(nodes, "g", [x], [y], inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_manifest(bundle):
    with open(os.path.join(bundle, "manifest.json")) as f:
        return json.load(f)


def write_manifest(bundle, manifest):
    with open(os.path.join(bundle, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def refresh_digest(bundle, manifest, relative):
    for entry in manifest["files"]:
        if entry["path"] == relative:
            entry["sha256"] = sha256(os.path.join(bundle, relative))


def x86_variants(manifest):
    return [v for v in manifest["cpu"] if v["arch"] == "x86_64"]


# Each edit takes (bundle dir, scratch dir) and changes the bundle copy.
def shrink_buffer(kind):
    def edit(bundle, _):
        manifest = read_manifest(bundle)
        buffer = next(b for b in manifest["buffers"] if b["kind"] == kind)
        buffer["shape"] = buffer["shape"][:-1] + [1]
        write_manifest(bundle, manifest)
    return edit


def drop_launch_arg(bundle, _):
    manifest = read_manifest(bundle)
    launch = next(la for la in manifest["launches"] if la["kind"] == "kernel")
    launch["args"] = launch["args"][:-1]
    write_manifest(bundle, manifest)


def symlink_outside(bundle, scratch):
    # The digests still match: the file is byte for byte the bundle's own, only it lies outside.
    for variant in x86_variants(read_manifest(bundle)):
        inside = os.path.join(bundle, variant["file"])
        outside = os.path.join(scratch, os.path.basename(inside))
        shutil.move(inside, outside)
        os.symlink(outside, inside)


def corrupt(relative_of):
    def edit(bundle, _):
        relative = relative_of(read_manifest(bundle))
        path = os.path.join(bundle, relative)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
    return edit


def corrupt_kernels(bundle, scratch):
    # Every x86_64 variant: the runtime verifies the files it reads, i.e. the variant it picks.
    for variant in x86_variants(read_manifest(bundle)):
        corrupt(lambda m: variant["file"])(bundle, scratch)


def foreign_arch(bundle, _):
    manifest = read_manifest(bundle)
    arm = next(v for v in manifest["cpu"] if v["arch"] == "aarch64")
    for variant in x86_variants(manifest):
        shutil.copyfile(os.path.join(bundle, arm["file"]), os.path.join(bundle, variant["file"]))
        refresh_digest(bundle, manifest, variant["file"])
    write_manifest(bundle, manifest)


def check(name, command, message, problems_out, outputs=None, tmp=None):
    """Runs `command`; appends problems; prints one line per case."""
    env = dict(os.environ)
    if tmp:
        env["TMPDIR"] = tmp
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        problems_out.append(f"{name}: still running after 60 s")
        print(f"FAIL {name}: still running after 60 s")
        return
    elapsed = time.monotonic() - start
    problems = error_problems(result, message)
    # tensorc-run describes the bundle it loaded (one line) before it runs; nothing else.
    header = [line for line in result.stdout.splitlines() if line.endswith(" threads")]
    if result.stdout.splitlines() != header[:1]:
        problems.append(f"printed on stdout: {result.stdout[:200]!r}")
    if outputs and os.path.exists(outputs):
        problems.append(f"wrote {outputs}")
    if elapsed > LIMIT_SECONDS:
        problems.append(f"took {elapsed:.1f} s (limit {LIMIT_SECONDS} s)")
    if problems:
        problems_out.append(name)
        print(f"FAIL {name}: {'; '.join(problems)}\n  stderr: {result.stderr.strip()}")
    else:
        print(f"ok   {name} ({elapsed:.1f} s): {result.stderr.strip()}")


def runners(args):
    return {"run": [args.tensorc, "run"], "tensorc-run": [args.runner]}


def bundle_cases(args, root, bundle, failures):
    inputs = os.path.join(root, "x.safetensors")
    safetensors_np.save(inputs, {"x": np.ones((3, 64), np.float32)})
    extra = os.path.join(root, "extra.safetensors")
    safetensors_np.save(extra, {"x": np.ones((3, 64), np.float32),
                                "z": np.ones((2,), np.float32)})
    cases = [
        ("output_buffer_shrunk", shrink_buffer("output"), ["--inputs", inputs],
         "is buffer 'y' f32[N, 1], but the kernel in"),
        ("input_buffer_shrunk", shrink_buffer("input"), ["--inputs", inputs],
         "is buffer 'x' f32[N, 1], but the kernel in"),
        ("launch_too_few_args", drop_launch_arg, ["--inputs", inputs], "argument"),
        ("so_symlinked_outside", symlink_outside, ["--inputs", inputs],
         "outside the bundle (symlinks must stay inside it)"),
        ("weights_corrupt", corrupt(lambda m: "weights.safetensors"), ["--inputs", inputs],
         "weights.safetensors: corrupt (its SHA-256 does not match the manifest's)"),
        ("kernels_corrupt", corrupt_kernels, ["--inputs", inputs],
         ".so: corrupt (its SHA-256 does not match the manifest's)"),
        ("aarch64_so_in_x86_bundle", foreign_arch, ["--inputs", inputs], "aarch64"),
        ("threads_100000", None, ["--inputs", inputs, "--threads", "100000"],
         "threads must be 0 (one per core) or 1 to 1024, got 100000"),
        ("extra_input_tensor", None, ["--inputs", extra],
         "tensor 'z' is not an input of the bundle"),
        ("missing_dim", None, ["--random-inputs", "1"], "'N'"),
        ("dim_not_in_bundle", None, ["--random-inputs", "1", "--dim", "N=3", "--dim", "M=2"],
         "--dim M: the bundle has no symbolic dim 'M'"),
        ("huge_dim", None, ["--random-inputs", "1", "--dim", f"N={2**62}"], "input 'x'"),
    ]
    for name, edit, options, message in cases:
        copy = os.path.join(root, name)
        shutil.copytree(bundle, copy, symlinks=True)
        scratch = os.path.join(root, name + ".outside")
        os.makedirs(scratch)
        if edit:
            edit(copy, scratch)
        for runner, command in runners(args).items():
            outputs = os.path.join(root, f"{name}.{runner}.out.safetensors")
            check(f"{name} ({runner})", command + [copy] + options + ["--outputs", outputs],
                  message, failures, outputs=outputs)


def budget_cases(args, root, failures):
    """Models of a few hundred bytes whose tensors are huge: Pad with pads of 2^31 (an 8 GiB
    output), OneHot with depth 2^31 (24 GiB) and Range(0, 2^62, 2^31) (16 GiB) on constant
    operands, which import no longer folds. They compile; the interpreter and both runners refuse
    the tensor under the default size limit, naming it and the flag that raises the limit."""
    def const(name, array):
        return numpy_helper.from_array(np.array(array, np.int64), name)

    models = {
        "pad_2^31": ([helper.make_node("Pad", ["x", "p"], ["y"])],
                     [const("p", [0, 0, 0, 2**31])]),
        "onehot_depth_2^31": ([helper.make_node("OneHot", ["i", "d", "v"], ["o"]),
                               helper.make_node("ReduceSum", ["o"], ["s"], keepdims=0),
                               helper.make_node("Add", ["x", "s"], ["y"])],
                              [const("i", [0, 1, 2, 3]), const("d", 2**31),
                               numpy_helper.from_array(np.array([0, 1], np.float32), "v")]),
        "range_2^31_elements": ([helper.make_node("Range", ["s", "l", "d"], ["r"]),
                                 helper.make_node("Cast", ["r"], ["f"], to=TensorProto.FLOAT),
                                 helper.make_node("ReduceSum", ["f"], ["t"], keepdims=1),
                                 helper.make_node("Add", ["x", "t"], ["y"])],
                                [const("s", 0), const("l", 2**62), const("d", 2**31)]),
    }
    for name, (nodes, inits) in models.items():
        model = os.path.join(root, name + ".onnx")
        make_model(model, nodes, inits, x_shape=(1, 4))
        outputs = os.path.join(root, name + ".out.safetensors")
        check(f"{name} (run --interp)", [args.tensorc, "run", model, "--interp",
                                          "--random-inputs", "1", "--outputs", outputs],
              "--max-tensor-bytes", failures, outputs=outputs)
        bundle = os.path.join(root, name + ".bundle")
        result = subprocess.run([args.tensorc, "compile", model, "-o", bundle],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            # Refusing at compile time is as good, if it says why.
            check(f"{name} (compile)", [args.tensorc, "compile", model, "-o", bundle],
                  "--max-tensor-bytes", failures)
            continue
        for runner, command in runners(args).items():
            check(f"{name} ({runner})", command + [bundle, "--random-inputs", "1", "--outputs",
                                                   outputs], "--max-tensor-bytes", failures,
                  outputs=outputs)


def interrupt_cases(args, root, model, failures):
    """Signals while the linker runs: poll for the compile's child process, then signal it."""
    for emit, signum in [(e, s) for e in ("bundle", "so")
                         for s in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL)]:
        name = f"{signal.Signals(signum).name} during the link (--emit={emit})"
        work = os.path.join(root, f"sig-{emit}-{signum}")
        tmp = os.path.join(work, "tmp")
        os.makedirs(tmp)
        out = os.path.join(work, "out." + emit)
        # --no-cache: a compile served from the cache (an earlier run of this test) links nothing
        compile_command = [args.tensorc, "compile", model, "-o", out, "--emit=" + emit,
                           "--no-cache"]
        proc = subprocess.Popen(compile_command,
                                env=dict(os.environ, TMPDIR=tmp), stderr=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, text=True)
        linker = None
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and linker is None:
            try:
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                    children = f.read().split()
            except OSError:
                children = []
            for child in children:
                try:
                    with open(f"/proc/{child}/comm") as f:
                        command = f.read().strip()
                except OSError:
                    continue
                # --emit=so: the C++ driver's link of the library (after ld.lld's of the kernels).
                if command == "tensorc":
                    continue  # forked, not yet the linker
                if emit == "bundle" or "lld" not in command:
                    linker = f"{child} ({command})"
            if linker is None:
                time.sleep(0.001)
        if linker is None:
            print(f"FAIL {name}: the compile ran no linker (exit {proc.wait()})")
            failures.append(name)
            continue
        proc.send_signal(signum)
        proc.wait(timeout=30)
        time.sleep(0.5)  # let a killed linker go (and anything it started)
        problems = []
        if proc.returncode != -signum:
            problems.append(f"exit status {proc.returncode} (want signal {signum})")
        left = sorted(os.listdir(work))
        left.remove("tmp")
        if signum == signal.SIGKILL:
            # Uncatchable: the staging directory stays, and the next compile removes it.
            if not any(entry.startswith(f".out.{emit}.tmp-") for entry in left):
                problems.append(f"no staging directory after SIGKILL? {left}")
            subprocess.run(compile_command, check=True, capture_output=True,
                           env=dict(os.environ, TMPDIR=tmp))
            left = sorted(os.listdir(work))
            left.remove("tmp")
            if left != ["out." + emit]:
                problems.append(f"the next compile left {left}")
        elif left:
            problems.append(f"left {left} next to the output")
        if os.listdir(tmp):
            problems.append(f"left {os.listdir(tmp)} in TMPDIR")
        if problems:
            failures.append(name)
            print(f"FAIL {name}: {'; '.join(problems)}")
        else:
            print(f"ok   {name}: signalled while {linker} ran; no temporaries left")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--runner", required=True, help="tensorc-run")
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as root:
        model = os.path.join(root, "m.onnx")
        make_model(model)
        bundle = os.path.join(root, "m.bundle")
        subprocess.run([args.tensorc, "compile", model, "-o", bundle, "--cpu-arch",
                        "x86_64,aarch64"], check=True, capture_output=True)
        # The unedited bundle runs in both runners (the cases fail for their edit alone).
        x = os.path.join(root, "x.safetensors")
        safetensors_np.save(x, {"x": np.ones((3, 64), np.float32)})
        for runner, command in runners(args).items():
            subprocess.run(command + [bundle, "--inputs", x], check=True, capture_output=True)
        bundle_cases(args, root, bundle, failures)
        budget_cases(args, root, failures)
        interrupt_cases(args, root, model, failures)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
