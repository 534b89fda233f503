"""tensorc from Python: compile models ahead of time and run them on numpy arrays or DLPack
tensors (torch, cupy, jax).

    import tensorc
    tensorc.compile("models/mlp.fx", "mlp_bundle")            # or emit="so" for one library
    model = tensorc.load("mlp_bundle")                         # device="cuda" for a GPU bundle
    (y,) = model.run(x)                                         # numpy in, numpy out
"""
import os

from ._tensorc import Error, LoadError, Model, RunError, Tensor, TensorInfo, __version__
from ._tensorc import load as _load
from ._compile import CompileError, compile, compile_torch, compiler_path

__all__ = ["load", "compile", "compile_torch", "compiler_path", "Model", "Tensor", "TensorInfo",
           "Error", "LoadError", "RunError", "CompileError", "__version__"]


def load(path, device="cpu", *, threads=0, variant=None, cuda_graphs=None):
    """Loads a compiled model: a bundle directory (`tensorc compile`) or a model library
    (`tensorc compile --emit=so`, CPU only). device: "cpu", "cuda" or "cuda:N" (a bundle compiled
    with --target cuda). threads: the CPU thread pool (0 = one per core); variant: force a CPU
    variant ("x86_64" skips AVX-512); cuda_graphs: None as compiled, True/False to override.
    Raises LoadError with the runtime's message."""
    return _load(os.fspath(path), device, threads=threads, variant=variant,
                 cuda_graphs=cuda_graphs)
