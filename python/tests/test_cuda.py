"""tensorc on a GPU (skipped without one; needs torch with CUDA): numpy inputs, and torch tensors
in GPU memory passed through DLPack without a copy, against the CPU bundle."""
import numpy as np
import pytest

import tensorc
from conftest import model_path, random_input

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda")
    return {name: (tensorc.compile(model_path(name), str(root / f"{name}_cpu")),
                   tensorc.compile(model_path(name), str(root / f"{name}_cuda"), target="cuda"))
            for name in ("mlp", "ln_silu")}


def reference(bundles, name, x):
    return tensorc.load(bundles[name][0]).run(x)[0]


@pytest.mark.parametrize("name,width", [("mlp", 1024), ("ln_silu", 128)])
def test_numpy_inputs_on_the_gpu(bundles, name, width):
    x = random_input((6, width), seed=2)
    model = tensorc.load(bundles[name][1], device="cuda")
    assert model.device == "cuda:0"
    (y,) = model.run(x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, reference(bundles, name, x), rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("name,width", [("mlp", 1024), ("ln_silu", 128)])
def test_torch_gpu_tensors_are_not_copied(bundles, name, width):
    x = random_input((6, width), seed=4)
    model = tensorc.load(bundles[name][1], device="cuda")
    (y,) = model.run(torch.from_numpy(x).cuda())
    assert model.input_copies == 0
    assert isinstance(y, tensorc.Tensor) and y.device == "cuda:0" and y.shape == (6, width)
    as_torch = torch.from_dlpack(y)
    assert as_torch.is_cuda and as_torch.data_ptr() == y.data_ptr
    np.testing.assert_allclose(as_torch.cpu().numpy(), reference(bundles, name, x),
                               rtol=1e-3, atol=1e-5)


def test_torch_streams(bundles):
    x = random_input((3, 128), seed=5)
    expected = reference(bundles, "ln_silu", x)
    model = tensorc.load(bundles["ln_silu"][1], device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        on_side = torch.from_numpy(x).cuda() * 1  # queued on `side`, which the run must follow
        (y,) = model.run(on_side, stream=side.cuda_stream)
    np.testing.assert_allclose(torch.from_dlpack(y).cpu().numpy(), expected, rtol=1e-3,
                               atol=1e-5)
    # torch's default stream is the legacy one (handle 0).
    default = torch.from_numpy(x).cuda()
    (y,) = model.run(default, stream=torch.cuda.current_stream().cuda_stream)
    np.testing.assert_allclose(torch.from_dlpack(y).cpu().numpy(), expected, rtol=1e-3,
                               atol=1e-5)


def test_outputs_outlive_the_model(bundles):
    x = random_input((2, 128), seed=6)
    model = tensorc.load(bundles["ln_silu"][1], device="cuda")
    (y,) = model.run(torch.from_numpy(x).cuda())
    del model
    np.testing.assert_allclose(torch.from_dlpack(y).cpu().numpy(),
                               reference(bundles, "ln_silu", x), rtol=1e-3, atol=1e-5)


def test_gpu_input_errors(bundles):
    x = torch.from_numpy(random_input((4, 128))).cuda()
    cpu = tensorc.load(bundles["ln_silu"][0])
    with pytest.raises(tensorc.RunError, match="the model runs on the CPU"):
        cpu.run(x)
    gpu = tensorc.load(bundles["ln_silu"][1], device="cuda")
    with pytest.raises(tensorc.RunError, match="strided view"):
        gpu.run(torch.cat([x, x], 1)[:, ::2])
    with pytest.raises(tensorc.RunError, match=r"input 'x' is f64\[4, 128\], expected f32"):
        gpu.run(x.double())


def test_cupy_arrays(bundles):
    cupy = pytest.importorskip("cupy")
    x = random_input((3, 128), seed=8)
    model = tensorc.load(bundles["ln_silu"][1], device="cuda")
    (y,) = model.run(cupy.asarray(x))
    assert model.input_copies == 0
    np.testing.assert_allclose(cupy.asnumpy(cupy.from_dlpack(y)), reference(bundles, "ln_silu", x),
                               rtol=1e-3, atol=1e-5)
