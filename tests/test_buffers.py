"""softlin.buffers: token arrays handed to JAX keep their bits, and aligned ones are not copied."""
import numpy as np
import pytest

from softlin import buffers
from softlin._jax import jax


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="a host buffer is aliased only by the CPU backend")
def test_aligned_buffer_is_handed_over_without_a_copy():
    """An aligned_empty buffer starts on a 64-byte boundary and JAX reads it in place (the same
    address); its values, and those of a misaligned slice (copied), are the input's bits."""
    rng = np.random.default_rng(3)
    for shape in [(3, 4, 1000), (1, 9, 65536), (7,)]:
        a = buffers.aligned_empty(shape)
        a[...] = rng.standard_normal(shape)
        assert a.ctypes.data % buffers.ALIGN == 0
        j = buffers.handover(a)
        assert j.unsafe_buffer_pointer() == a.ctypes.data
        np.testing.assert_array_equal(np.asarray(j), a)
    b = rng.standard_normal(1001)[1:]                    # 8 bytes off numpy's 16-byte alignment
    np.testing.assert_array_equal(np.asarray(buffers.handover(b)), b)
