"""tensorc on a GPU (skipped without one; needs torch with CUDA): numpy inputs, and torch tensors
in GPU memory passed through DLPack without a copy, against the CPU bundle.

Where no compiler is (a GPU machine with only the runtime), TENSORC_TEST_BUNDLES=DIR takes the
bundles from DIR/NAME_cpu and DIR/NAME_cuda, made beforehand with `tensorc compile models/NAME.fx
-o DIR/NAME_cpu` and the same with `--target cuda` (models it lacks are skipped)."""
import os

import numpy as np
import pytest

import tensorc
from conftest import model_path, random_input

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")

MODELS = ("mlp", "ln_silu")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    kit = os.environ.get("TENSORC_TEST_BUNDLES")
    if kit:
        return {name: (os.path.join(kit, f"{name}_cpu"), os.path.join(kit, f"{name}_cuda"))
                for name in MODELS if os.path.isdir(os.path.join(kit, f"{name}_cuda"))}
    root = tmp_path_factory.mktemp("cuda")
    return {name: (tensorc.compile(model_path(name), str(root / f"{name}_cpu")),
                   tensorc.compile(model_path(name), str(root / f"{name}_cuda"), target="cuda"))
            for name in MODELS}


def gpu_model(bundles, name):
    if name not in bundles:
        pytest.skip(f"no {name} bundles")
    model = tensorc.load(bundles[name][1], device="cuda")
    return model, model.inputs[0].shape[1]


def reference(bundles, name, x):
    return tensorc.load(bundles[name][0]).run(x)[0]


@pytest.mark.parametrize("name", MODELS)
def test_numpy_inputs_on_the_gpu(bundles, name):
    model, width = gpu_model(bundles, name)
    x = random_input((6, width), seed=2)
    assert model.device == "cuda:0"
    (y,) = model.run(x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, reference(bundles, name, x), rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_torch_gpu_tensors_are_not_copied(bundles, name):
    model, width = gpu_model(bundles, name)
    x = random_input((6, width), seed=4)
    (y,) = model.run(torch.from_numpy(x).cuda())
    assert model.input_copies == 0
    assert isinstance(y, tensorc.Tensor) and y.device == "cuda:0" and y.shape == (6, width)
    as_torch = torch.from_dlpack(y)
    assert as_torch.is_cuda and as_torch.data_ptr() == y.data_ptr
    np.testing.assert_allclose(as_torch.cpu().numpy(), reference(bundles, name, x),
                               rtol=1e-3, atol=1e-5)


def test_torch_streams(bundles):
    model, _ = gpu_model(bundles, "ln_silu")
    x = random_input((512, 128), seed=5)
    expected = reference(bundles, "ln_silu", x)
    host = torch.from_numpy(x).pin_memory()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        # Queued on `side`: the run on the model's own stream must wait for it (DLPack's
        # handshake: the producer orders its current stream before the consumer's).
        torch.cuda._sleep(10_000_000)
        produced = host.to("cuda", non_blocking=True) * 1
        (y,) = model.run(produced)
        # On the caller's stream.
        (z,) = model.run(produced, stream=side.cuda_stream)
    side.synchronize()
    for result in (y, z):
        np.testing.assert_allclose(torch.from_dlpack(result).cpu().numpy(), expected,
                                   rtol=1e-3, atol=1e-5)
    # torch's default stream is the legacy one (handle 0).
    default = torch.from_numpy(x).cuda()
    (y,) = model.run(default, stream=torch.cuda.current_stream().cuda_stream)
    np.testing.assert_allclose(torch.from_dlpack(y).cpu().numpy(), expected, rtol=1e-3,
                               atol=1e-5)


def test_outputs_outlive_the_model(bundles):
    x = random_input((2, 128), seed=6)
    model, _ = gpu_model(bundles, "ln_silu")
    (y,) = model.run(torch.from_numpy(x).cuda())
    del model
    np.testing.assert_allclose(torch.from_dlpack(y).cpu().numpy(),
                               reference(bundles, "ln_silu", x), rtol=1e-3, atol=1e-5)


def test_gpu_input_errors(bundles):
    gpu, _ = gpu_model(bundles, "ln_silu")
    x = torch.from_numpy(random_input((4, 128))).cuda()
    cpu = tensorc.load(bundles["ln_silu"][0])
    with pytest.raises(tensorc.RunError, match="the model runs on the CPU"):
        cpu.run(x)
    with pytest.raises(tensorc.RunError, match="strided view"):
        gpu.run(torch.cat([x, x], 1)[:, ::2])
    with pytest.raises(tensorc.RunError, match=r"input 'x' is f64\[4, 128\], expected f32"):
        gpu.run(x.double())


def test_cupy_arrays(bundles):
    cupy = pytest.importorskip("cupy")
    x = random_input((3, 128), seed=8)
    model, _ = gpu_model(bundles, "ln_silu")
    (y,) = model.run(cupy.asarray(x))
    assert model.input_copies == 0
    np.testing.assert_allclose(cupy.asnumpy(cupy.from_dlpack(y)), reference(bundles, "ln_silu", x),
                               rtol=1e-3, atol=1e-5)
