"""A CPU bundle run in this Python process through the runtime's C ABI (include/tensorc/tensorc.h,
libtensorc_rt.so) with ctypes: no extension module, so any Python 3 loads it.

bench/run.py uses it to time tensorc and onnxruntime in short alternating blocks inside one
process, so that both see the same state of the machine.

    model = InProcessModel("build/package/lib/libtensorc_rt.so", "out/bundle", threads=1)
    model.set_inputs([array, ...])   # numpy arrays in the bundle's input order
    model.run()                      # one timed-able run; outputs freed
    outputs = model.outputs()        # one run; copies of the outputs as numpy arrays
    model.close()
"""
import ctypes
import os

import numpy as np

# tc_dtype values (fixed by the header).
_DTYPES = {np.dtype(np.float64): 0, np.dtype(np.float32): 1, np.dtype(np.float16): 2,
           np.dtype(np.int64): 4, np.dtype(np.int32): 5, np.dtype(np.int16): 6,
           np.dtype(np.int8): 7, np.dtype(np.uint8): 8, np.dtype(np.uint16): 9,
           np.dtype(np.uint32): 10, np.dtype(np.uint64): 11, np.dtype(np.bool_): 12}
_NUMPY = {code: dtype for dtype, code in _DTYPES.items()}
_NUMPY[3] = np.dtype(np.uint16)  # bf16: its bits


class _LoadOptions(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int32), ("variant", ctypes.c_char_p)]


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int64),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


class InProcessError(Exception):
    pass


def runtime_library(build_dir):
    """Where a CMake build directory puts libtensorc_rt.so (the install tree's copy)."""
    return os.path.join(build_dir, "package", "lib", "libtensorc_rt.so")


class InProcessModel:
    def __init__(self, library, bundle, threads):
        self._lib = ctypes.CDLL(os.path.abspath(library))
        lib = self._lib
        lib.tc_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(_LoadOptions),
                                      ctypes.POINTER(ctypes.c_void_p)]
        lib.tc_model_load.restype = ctypes.c_void_p
        lib.tc_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor), ctypes.c_size_t,
                                     ctypes.POINTER(_Tensor), ctypes.c_size_t]
        lib.tc_model_run.restype = ctypes.c_void_p
        lib.tc_model_num_outputs.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.tc_model_num_outputs.restype = ctypes.c_void_p
        lib.tc_model_free.argtypes = [ctypes.c_void_p]
        lib.tc_model_free.restype = None
        lib.tc_tensor_free.argtypes = [ctypes.POINTER(_Tensor)]
        lib.tc_tensor_free.restype = None
        lib.tc_status_message.argtypes = [ctypes.c_void_p]
        lib.tc_status_message.restype = ctypes.c_char_p
        lib.tc_status_free.argtypes = [ctypes.c_void_p]
        lib.tc_status_free.restype = None
        self._model = ctypes.c_void_p()
        options = _LoadOptions(threads, None)
        self._check(lib.tc_model_load(os.path.abspath(bundle).encode(), ctypes.byref(options),
                                      ctypes.byref(self._model)), f"loading {bundle}")
        count = ctypes.c_size_t()
        self._check(lib.tc_model_num_outputs(self._model, ctypes.byref(count)), "outputs")
        self._outputs = (_Tensor * count.value)()
        self._output_pointers = [ctypes.pointer(out) for out in self._outputs]
        self._num_outputs = count.value
        self._run, self._free = lib.tc_model_run, lib.tc_tensor_free
        self._inputs, self._num_inputs = None, 0

    def _check(self, status, what):
        if status:
            message = self._lib.tc_status_message(status).decode(errors="replace")
            self._lib.tc_status_free(status)
            raise InProcessError(f"{what}: {message}")

    def set_inputs(self, arrays):
        """Binds numpy arrays (kept alive here) as the inputs of every later run()."""
        self._arrays = [np.ascontiguousarray(a) for a in arrays]
        self._shapes = [(ctypes.c_int64 * max(a.ndim, 1))(*a.shape) for a in self._arrays]
        self._inputs = (_Tensor * len(self._arrays))()
        self._num_inputs = len(self._arrays)
        for tensor, array, shape in zip(self._inputs, self._arrays, self._shapes):
            if array.dtype not in _DTYPES:
                raise InProcessError(f"no tensorc dtype for numpy {array.dtype}")
            tensor.dtype = _DTYPES[array.dtype]
            tensor.rank = array.ndim
            tensor.shape = shape
            tensor.data = array.ctypes.data

    def _call(self):
        """One run on the bound inputs; its outputs are the library's (see _free_outputs)."""
        ctypes.memset(self._outputs, 0, ctypes.sizeof(self._outputs))  # data NULL: library's
        self._check(self._run(self._model, self._inputs, self._num_inputs, self._outputs,
                              self._num_outputs), "run")

    def _free_outputs(self):
        for pointer in self._output_pointers:
            self._free(pointer)

    def run(self):
        """One run on the bound inputs; the outputs are freed."""
        self._call()
        self._free_outputs()

    def outputs(self):
        """One run on the bound inputs; copies of its outputs as numpy arrays, in order."""
        self._call()
        arrays = []
        try:
            for out in self._outputs:
                if out.dtype not in _NUMPY:
                    raise InProcessError(f"output dtype code {out.dtype} has no numpy dtype")
                shape = tuple(out.shape[d] for d in range(out.rank))
                dtype = _NUMPY[out.dtype]
                count = int(np.prod(shape, dtype=np.int64))
                if count == 0:
                    arrays.append(np.zeros(shape, dtype))
                    continue
                buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(out.data)
                arrays.append(np.frombuffer(buffer, dtype=dtype).reshape(shape).copy())
        finally:
            self._free_outputs()
        return arrays

    def close(self):
        if self._model:
            self._lib.tc_model_free(self._model)
            self._model = ctypes.c_void_p()
