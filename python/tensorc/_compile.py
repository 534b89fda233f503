"""tensorc.compile and tensorc.compile_torch: the `tensorc` compiler driver, run as a subprocess."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

from ._tensorc import Error

_HERE = os.path.dirname(os.path.abspath(__file__))


class CompileError(Error):
    """The compiler (or the torch exporter) rejected the model; the message is its own."""


def compiler_path():
    """The `tensorc` driver this package uses: $TENSORC_COMPILER, else the one built or installed
    with the package, else `tensorc` on PATH."""
    candidates = [os.environ.get("TENSORC_COMPILER")]
    try:
        from . import _paths  # written by the build: the driver built or installed with us
        candidates.append(os.path.join(_HERE, _paths.COMPILER))
    except ImportError:
        pass
    candidates.append(shutil.which("tensorc"))
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise CompileError("no tensorc compiler found: set TENSORC_COMPILER or put tensorc on PATH")


def _option_args(key, value):
    """compile()'s keyword options as driver flags: cpu_arch=["x86_64"] -> --cpu-arch x86_64,
    train=True -> --train, O="reduce-overhead" -> -O reduce-overhead; False or None: left out."""
    if value is None or value is False:
        return []
    flag = "-" + key if len(key) == 1 else "--" + key.replace("_", "-")
    if value is True:
        return [flag]
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return [flag, str(value)]


def compile(model_path, out, target="cpu", **options):
    """Compiles `model_path` (.onnx, or .fx with its .safetensors) into `out`: a bundle directory,
    or with emit="so" one shared library. `target` is "cpu", "cuda" or "cpu,cuda" (or a list);
    other keywords are the driver's `compile` options with dashes as underscores (cpu_arch,
    cuda_arch, emit, O, fuse_attention, no_fuse_attention, train, loss, lr, ...). Returns `out`;
    raises CompileError with the compiler's message."""
    args = [compiler_path(), "compile", os.fspath(model_path), "-o", os.fspath(out)]
    args += _option_args("target", target)
    for key, value in options.items():
        args += _option_args(key, value)
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        message = result.stderr.strip() or result.stdout.strip()
        raise CompileError(message or f"tensorc compile exited with status {result.returncode}")
    return os.fspath(out)


def _exporter():
    """tools/export_fx.py, shipped in the package (it imports the modules shipped beside it)."""
    tools = os.path.join(_HERE, "_tools")
    module = sys.modules.get("tensorc._export_fx")
    if module is None:
        spec = importlib.util.spec_from_file_location("tensorc._export_fx",
                                                      os.path.join(tools, "export_fx.py"))
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, tools)
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(tools)
        sys.modules["tensorc._export_fx"] = module
    return module


def compile_torch(module, example_inputs, out, *, dynamic_batch=False, fx_path=None, **options):
    """Exports `module` with torch.export on `example_inputs` (a tuple of tensors), writes it as
    FX-text (tools/export_fx.py) and compiles it like compile(). The module is exported as it is:
    call .eval() first for inference. dynamic_batch=True makes dim 0 of every input one symbolic
    batch dim. fx_path keeps the .fx (and its .safetensors) there instead of a temporary
    directory. Returns `out`."""
    import torch

    exporter = _exporter()
    example = tuple(example_inputs)
    dynamic = None
    if dynamic_batch:
        batch = torch.export.Dim("batch", min=1, max=1 << 20)
        dynamic = tuple({0: batch} for _ in example)
    with torch.no_grad():
        program = torch.export.export(module, example, dynamic_shapes=dynamic)
    origin = f"tensorc.compile_torch({type(module).__name__})"
    with tempfile.TemporaryDirectory(prefix="tensorc-export-") as scratch:
        path = os.fspath(fx_path) if fx_path else os.path.join(scratch, "model.fx")
        try:
            exporter.write(exporter.describe_exported_program(
                program, [f"Exported by {origin}."]), path)
        except exporter.ExportError as error:
            raise CompileError(str(error)) from error
        return compile(path, out, **options)
