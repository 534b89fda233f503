# Results over 65536 elements stay as computation (300*300 = 90000); smaller ones fold.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK-NEXT:    %big : f32[300, 300] = call_function[target=aten.full](args=([300, 300], 1.0))
# CHECK-NEXT:    %small : f32[2, 2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2, 2]>[1.0, 1.0, 1.0, 1.0]})
# CHECK-NEXT:    return (%big, %small)
graph(%x: f32[3]):
  %big : f32[300, 300] = call_function[target=aten.full](args=([300, 300], 1.0))
  %small : f32[2, 2] = call_function[target=aten.full](args=([2, 2], 1.0))
  return (%big, %small)
