"""tensorc.compile and tensorc.compile_torch: the compiled models against the interpreter and
torch, options passed to the driver, and its errors as CompileError."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorc
from conftest import driver_run, model_path, random_input


def test_compile_bundle_and_library_match_the_interpreter(tmp_path):
    x = random_input((3, 128), seed=7)
    expected = driver_run(model_path("ln_silu"), {"x": x}, tmp_path, "--interp")["silu3"]
    bundle = tensorc.compile(model_path("ln_silu"), tmp_path / "bundle", target="cpu",
                             cpu_arch=["x86_64"], O="default")
    assert bundle == str(tmp_path / "bundle") and os.path.isdir(bundle)
    library = tensorc.compile(model_path("ln_silu"), tmp_path / "ln_silu.so", emit="so")
    for path in (bundle, library):
        (y,) = tensorc.load(path).run(x)
        np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-5)


def test_compile_errors_carry_the_compiler_message(tmp_path):
    broken = tmp_path / "broken.fx"
    broken.write_text("graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.nope]"
                      "(args=(%x,))\n  return (%y,)\n")
    with pytest.raises(tensorc.CompileError, match=r"broken\.fx:2:.*aten\.nope"):
        tensorc.compile(broken, tmp_path / "out")
    assert not os.path.exists(tmp_path / "out")
    with pytest.raises(tensorc.CompileError, match="--no-such-option"):
        tensorc.compile(model_path("ln_silu"), tmp_path / "out", no_such_option=True)
    assert issubclass(tensorc.CompileError, tensorc.Error)


def test_the_packaged_exporter_loads_without_torch():
    # compile_torch runs the exporter the package ships; every module it imports must ship with
    # it. torch is imported only when it exports, so this runs where torch is absent (as on CI),
    # here made certain by hiding it.
    code = ("import sys\nsys.modules['torch'] = None\nimport tensorc._compile\n"
            "exporter = tensorc._compile._exporter()\n"
            "assert callable(exporter.lower) and callable(exporter.weights_of)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_compile_torch_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                 torch.nn.LayerNorm(32), torch.nn.Linear(32, 8)).eval()
    example = torch.rand(4, 16)
    out = tensorc.compile_torch(module, (example,), tmp_path / "bundle", dynamic_batch=True,
                                fx_path=tmp_path / "module.fx")
    assert os.path.exists(tmp_path / "module.fx")
    model = tensorc.load(out)
    assert model.inputs[0].shape == ["s0", 16]
    x = torch.rand(7, 16) * 2 - 1  # another batch size than the example's
    (y,) = model.run(x)
    with torch.no_grad():
        expected = module(x).numpy()
    np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-5)


def test_compile_torch_unsupported_op_names_the_node(tmp_path):
    torch = pytest.importorskip("torch")

    class Flip(torch.nn.Module):
        def forward(self, x):
            return torch.flip(x, [0]) + 1

    with pytest.raises(tensorc.CompileError, match=r"node 'flip' \(aten\.flip\.default\)"):
        tensorc.compile_torch(Flip(), (torch.rand(2, 3),), tmp_path / "bundle")
