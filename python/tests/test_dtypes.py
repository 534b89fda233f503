"""dtypes numpy lacks: bfloat16 inputs from torch through DLPack, bfloat16 outputs as
tensorc.Tensor handed back to torch (both DLPack capsule versions), checked against torch."""
import numpy as np
import pytest

import tensorc

torch = pytest.importorskip("torch")

CASTS = """graph(%x: f32[s0, 4], %h: bf16[s0, 4]):
  %b : bf16[s0, 4] = call_function[target=prims.convert_element_type](args=(%x, bf16))
  %s : bf16[s0, 4] = call_function[target=aten.add](args=(%b, %h))
  %f : f32[s0, 4] = call_function[target=prims.convert_element_type](args=(%h, f32))
  return (%s, %f)
"""


@pytest.fixture(scope="module")
def casts(tmp_path_factory):
    root = tmp_path_factory.mktemp("casts")
    (root / "casts.fx").write_text(CASTS)
    return tensorc.load(tensorc.compile(root / "casts.fx", root / "bundle"))


def test_bfloat16_through_dlpack(casts):
    assert [i.dtype for i in casts.inputs] == ["f32", "bf16"]
    x = torch.rand(3, 4) * 2 - 1
    h = (torch.rand(3, 4) * 2 - 1).to(torch.bfloat16)
    s, f = casts.run(x.numpy(), h)
    assert casts.input_copies == 0
    # numpy has no bfloat16: that output is a tensorc.Tensor, which torch takes without a copy.
    assert isinstance(s, tensorc.Tensor) and isinstance(f, np.ndarray)
    assert (s.shape, s.dtype, s.device) == ((3, 4), "bf16", "cpu")
    as_torch = torch.from_dlpack(s)
    assert as_torch.dtype == torch.bfloat16 and as_torch.data_ptr() == s.data_ptr
    assert torch.equal(as_torch, x.to(torch.bfloat16) + h)
    assert np.array_equal(f, h.float().numpy())
    # The unversioned capsule (DLPack before 1.0) too.
    legacy = torch.utils.dlpack.from_dlpack(s.__dlpack__())
    assert torch.equal(legacy, as_torch)
    with pytest.raises(TypeError, match="numpy has no bf16"):
        s.numpy()
    with pytest.raises(TypeError, match="bf16, which numpy lacks"):
        casts.run(x.numpy(), [[0.0] * 4] * 3)
