"""tensorc.load and Model.run on the CPU: bundles and model libraries against the `tensorc`
driver (bit for bit) and the interpreter, inputs used in place, and errors."""
import gc
import re

import numpy as np
import pytest

import tensorc
from conftest import driver_run, manifest, model_path, random_input


def bits(array):
    return np.ascontiguousarray(array).view(np.uint8)


def test_signature_matches_manifest(mlp_bundle, mlp_library):
    written = manifest(mlp_bundle)
    bundle = tensorc.load(mlp_bundle)
    library = tensorc.load(mlp_library)
    for infos, descs in ((bundle.inputs, written["inputs"]), (bundle.outputs, written["outputs"])):
        assert [i.name for i in infos] == [d["name"] for d in descs]
        assert [i.dtype for i in infos] == [d["dtype"] for d in descs]
        assert [i.shape for i in infos] == [d["shape"] for d in descs]
    # A model library knows symbolic dims only as unknown.
    assert [i.name for i in library.inputs] == [d["name"] for d in written["inputs"]]
    assert library.inputs[0].shape == [None if isinstance(d, str) else d
                                       for d in written["inputs"][0]["shape"]]
    assert bundle.device == library.device == "cpu"


def test_mlp_matches_tensorc_run_bit_for_bit(mlp_bundle, mlp_library, tmp_path):
    x = random_input((3, 1024), seed=1)
    expected = driver_run(mlp_bundle, {"x": x}, tmp_path)["fc3"]
    interpreted = driver_run(model_path("mlp"), {"x": x}, tmp_path, "--interp")["fc3"]
    for path in (mlp_bundle, mlp_library):
        (y,) = tensorc.load(path).run(x)
        assert y.dtype == np.float32 and y.shape == (3, 1024)
        assert np.array_equal(bits(y), bits(expected)), path
        np.testing.assert_allclose(y, interpreted, rtol=1e-3, atol=1e-5)


def test_dense_numpy_inputs_are_used_in_place(ln_silu_bundle):
    model = tensorc.load(ln_silu_bundle)
    x = random_input((4, 128))
    (expected,) = model.run(x)
    assert model.input_copies == 0
    # Strided or Fortran-ordered arrays, and lists, are copied into dense ones first.
    wide = random_input((4, 256))
    wide[:, ::2] = x
    (strided,) = model.run(wide[:, ::2])
    (fortran,) = model.run(np.asfortranarray(x))
    (listed,) = model.run(x.tolist())
    assert model.input_copies == 3
    for y in (strided, fortran, listed):
        assert np.array_equal(bits(y), bits(expected))


def test_inputs_by_name(ln_silu_bundle):
    model = tensorc.load(ln_silu_bundle)
    x = random_input((2, 128))
    assert np.array_equal(model.run({"x": x})[0], model(x)[0])


def test_outputs_outlive_the_model(mlp_bundle, mlp_library):
    x = random_input((2, 1024))
    for path in (mlp_bundle, mlp_library):
        model = tensorc.load(path)
        (y,) = model.run(x)
        kept = y.copy()
        del model
        gc.collect()
        y += 0  # writable, and still its own memory
        assert np.array_equal(y, kept)


def test_torch_tensors_pass_through_dlpack(ln_silu_bundle):
    torch = pytest.importorskip("torch")
    model = tensorc.load(ln_silu_bundle)
    x = random_input((5, 128))
    (expected,) = model.run(x)
    (y,) = model.run(torch.from_numpy(x))
    assert model.input_copies == 0
    assert np.array_equal(bits(y), bits(expected))
    # A transposed view is strided: copied, same result.
    (transposed,) = model.run(torch.from_numpy(np.ascontiguousarray(x.T)).t())
    assert model.input_copies == 1
    assert np.array_equal(bits(transposed), bits(expected))
    # Outputs go back to torch without a copy.
    as_torch = torch.from_dlpack(y)
    assert as_torch.data_ptr() == y.ctypes.data


def test_run_errors_carry_the_runtime_message(mlp_bundle, mlp_library):
    x = random_input((2, 1024))
    for path in (mlp_bundle, mlp_library):
        model = tensorc.load(path)
        with pytest.raises(tensorc.RunError, match=r"input 'x' is f64\[2, 1024\], expected f32"):
            model.run(x.astype(np.float64))
        with pytest.raises(tensorc.RunError, match=r"input 'x' dim 1 is 512, expected 1024"):
            model.run(x[:, :512].copy())
        with pytest.raises(tensorc.RunError, match=r"expected 1 inputs \(x\), got 2"):
            model.run(x, x)
        with pytest.raises(tensorc.RunError, match="unknown input 'y'"):
            model.run({"x": x, "y": x})
        with pytest.raises(TypeError, match="complex128 has no tensorc dtype"):
            model.run(x.astype(np.complex128))
    assert issubclass(tensorc.RunError, tensorc.Error)
    assert issubclass(tensorc.Error, RuntimeError)


def test_load_errors_carry_the_runtime_message(mlp_bundle, mlp_library, tmp_path):
    with pytest.raises(tensorc.LoadError, match="no such bundle directory or model library"):
        tensorc.load(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(tensorc.LoadError, match="manifest.json"):
        tensorc.load(empty)
    with pytest.raises(tensorc.LoadError, match="cannot be loaded as a model library"):
        tensorc.load(model_path("mlp"))
    with pytest.raises(tensorc.LoadError, match="compile it with --target cuda"):
        tensorc.load(mlp_bundle, device="cuda")
    with pytest.raises(tensorc.LoadError, match="model libraries hold CPU kernels only"):
        tensorc.load(mlp_library, device="cuda")
    with pytest.raises(tensorc.LoadError, match="variant"):
        tensorc.load(mlp_bundle, variant="sparc")
    with pytest.raises(ValueError, match="device must be"):
        tensorc.load(mlp_bundle, device="gpu")


def test_cuda_bundle_without_a_gpu_says_why(tmp_path):
    try:
        bundle = tensorc.compile(model_path("ln_silu"), str(tmp_path / "cuda"), target="cuda")
    except tensorc.CompileError as error:
        pytest.skip(f"this tensorc cannot compile for CUDA: {error}")
    try:
        tensorc.load(bundle, device="cuda")
    except tensorc.LoadError as error:
        # No driver library, or a driver with no device: the message says which.
        assert re.search(r"CUDA driver|cuInit|CUDA device", str(error)), str(error)
        assert str(error).startswith(bundle), str(error)
    else:
        pytest.skip("this machine has a GPU: test_cuda.py covers it")


def test_threads_and_variant(mlp_bundle):
    x = random_input((2, 1024), seed=3)
    (reference,) = tensorc.load(mlp_bundle).run(x)
    model = tensorc.load(mlp_bundle, threads=1, variant="x86_64")
    assert model.description == "cpu (x86_64)"
    (y,) = model.run(x)
    np.testing.assert_allclose(y, reference, rtol=1e-5, atol=1e-6)
