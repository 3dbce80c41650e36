"""User policies on the GPU (backend="cuda"), tested without a GPU: the DLPack exchange the engine
runs with a device policy (the engine's arrays handed over as DLPack views, the returned scores read
in place) runs here on CPU arrays (kDLCPU) through the same two C++ functions, and the Python
adapter that turns the views into an array module's arrays runs with numpy as that module. On a
GPU, tests/test_gpu.cu's GpuFunctionRollout checks the engine itself."""
import numpy as np
import pytest

import crawleval as ce
from crawleval import _core

KDLCPU, KDLCUDA = 1, 2


def test_a_view_is_the_engines_memory_and_the_scores_are_read_in_place():
    values = np.array([3.0, -1.5, 1e-300, 1e300, np.inf, -0.0])
    seen = {}

    def fn(view):
        assert view.__dlpack_device__() == (KDLCPU, 0)
        a = np.from_dlpack(view)
        seen["values"] = a.copy()
        return a * 2.0

    out = _core._dlpack_exchange(fn, values, KDLCPU)
    np.testing.assert_array_equal(seen["values"], values)
    np.testing.assert_array_equal(out, values * 2.0)
    # NaN and an empty population pass through as they are.
    nan = _core._dlpack_exchange(lambda v: np.full(2, np.nan), np.zeros(2), KDLCPU)
    assert np.isnan(nan).all()
    assert _core._dlpack_exchange(lambda v: np.from_dlpack(v).copy(), np.zeros(0), KDLCPU).size == 0


@pytest.mark.parametrize(
    "result, words",
    [
        (lambda v: np.zeros(5), "1 dimension(s) and 5 entries"),
        (lambda v: np.zeros((2, 2)), "2 dimension(s)"),
        (lambda v: np.zeros(4, dtype=np.float32), "dtype is not float64"),
        (lambda v: np.zeros(8)[::2], "strided"),
        (lambda v: [0.0, 1.0, 2.0, 3.0], "returned a list"),
        (lambda v: None, "returned a NoneType"),
    ],
)
def test_what_is_not_n_float64_scores_is_refused_naming_it(result, words):
    with pytest.raises(ce.InputError) as e:
        _core._dlpack_exchange(result, np.zeros(4), KDLCPU)
    assert "policy 'test'" in str(e.value)
    assert words in str(e.value)
    assert "float64 array of shape (4,) on the CPU" in str(e.value)


def test_scores_on_another_device_than_the_engines_are_refused():
    # The engine expects CUDA device 0's memory; a numpy array is the CPU's. (The view handed to
    # the function is not touched: it describes device memory.)
    with pytest.raises(ce.InputError) as e:
        _core._dlpack_exchange(lambda v: np.zeros(3), np.zeros(3), KDLCUDA)
    assert "returned an array on the CPU; expected" in str(e.value)
    assert "on CUDA device 0" in str(e.value)


def _params(n):
    pop = ce.Population.synthetic(n, seed=3)
    return pop, ce._policy_params(ce._population(pop), 1.0, 10.0)


def test_the_device_adapter_hands_the_module_arrays_and_device_columns():
    # numpy stands in for CuPy/PyTorch: from_dlpack on the views, asarray for the columns.
    n = 6
    pop, params = _params(n)
    arrays = ce._DeviceArrays(np)
    calls = []

    def policy(state, age, p):
        calls.append((p.epoch, p.replication, float(p.collected.sum())))
        assert isinstance(state, np.ndarray) and isinstance(p.u_star, np.ndarray)
        np.testing.assert_array_equal(p.u_star, params.u_star)
        return state * p.inv_cost + age

    adapter = ce._device_adapter("mine", policy, params, n, lambda: arrays)
    values = np.arange(n, dtype=np.float64)
    out = _core._dlpack_exchange(lambda v: adapter(v, v, v, 2, 5), values, KDLCPU)
    np.testing.assert_array_equal(out, values * params.inv_cost + values)
    assert calls == [(5, 2, float(values.sum()))]


def test_the_device_adapter_converts_the_modules_own_arrays_and_names_none():
    n = 3
    _, params = _params(n)
    arrays = ce._DeviceArrays(np)
    as_float32 = ce._device_adapter("f32", lambda s, a, p: np.asarray(s, np.float32), params, n,
                                    lambda: arrays)
    out = _core._dlpack_exchange(lambda v: as_float32(v, v, v, 0, 0), np.ones(n), KDLCPU)
    np.testing.assert_array_equal(out, np.ones(n))
    none = ce._device_adapter("silent", lambda s, a, p: None, params, n, lambda: arrays)
    with pytest.raises(ValueError, match="policy 'silent' returned None"):
        _core._dlpack_exchange(lambda v: none(v, v, v, 0, 0), np.ones(n), KDLCPU)


def test_array_module_is_checked_before_any_work():
    pop = ce.Population.synthetic(50, seed=1)
    with pytest.raises(ce.InputError, match="array_module= is for user policies on the GPU"):
        ce.evaluate(pop, 5, [lambda s, a, p: s], epochs=2, array_module="numpy")
    with pytest.raises(ce.InputError, match="cannot be imported"):
        ce.evaluate(pop, 5, [lambda s, a, p: s], epochs=2, backend="cuda",
                    array_module="no_such_module_here")
    with pytest.raises(ce.InputError, match="has no from_dlpack"):
        ce.evaluate(pop, 5, [lambda s, a, p: s], epochs=2, backend="cuda", array_module=object())


def test_without_a_gpu_backend_cuda_says_so_for_a_user_policy():
    pop = ce.Population.synthetic(50, seed=1)
    try:
        ce.evaluate(pop, 5, ["greedy"], epochs=2, backend="cuda")
    except ce.InputError as e:
        why = str(e)
    else:
        pytest.skip("a GPU is usable here")
    # The same refusal as a built-in policy's, before the policy is called.
    with pytest.raises(ce.InputError) as e:
        ce.evaluate(pop, 5, [lambda s, a, p: 1 / 0], epochs=2, backend="cuda")
    assert str(e.value) == why


def _fresh_params(n):
    from crawleval import fresh

    return fresh.FreshPolicyParams(
        rate=np.ones(n), importance=np.ones(n), cost=np.ones(n), complete=np.zeros(n, np.uint8),
        host=np.arange(n, dtype=np.uint64), id=np.arange(n, dtype=np.uint64), epoch_length=1.0,
        budget=1.0, host_cap=0, objective="harmonic")


def test_the_freshness_device_adapter_hands_the_module_arrays():
    from crawleval import fresh

    params = _fresh_params(5)
    seen = []

    def overdue(age, changes, p):
        seen.append((p.epoch, p.replication, isinstance(p.rate, np.ndarray)))
        return age * p.rate + changes

    adapter = fresh._fresh_device_adapter("overdue", overdue, params, 5,
                                          lambda: ce._DeviceArrays(np))
    values = np.arange(5, dtype=np.float64)
    out = _core._dlpack_exchange(lambda v: adapter(v, v, 1, 4), values, KDLCPU)
    np.testing.assert_array_equal(out, values * 2)
    assert seen == [(4, 1, True)]


def test_fresh_array_module_needs_backend_cuda_and_without_a_gpu_cuda_says_so():
    from crawleval import fresh

    pop = fresh.Population.synthetic(20, seed=2)
    with pytest.raises(ce.InputError, match="array_module= is for user policies on the GPU"):
        fresh.evaluate(pop, budget=2.0, policies=[lambda a, c, p: a * 1.0], epochs=2,
                       array_module="numpy")
    try:
        fresh.evaluate(pop, budget=2.0, policies=["uniform"], epochs=2, backend="cuda")
    except ce.InputError as e:
        why = str(e)
    else:
        pytest.skip("a GPU is usable here")
    with pytest.raises(ce.InputError) as e:
        fresh.evaluate(pop, budget=2.0, policies=[lambda a, c, p: 1 / 0], epochs=2,
                       backend="cuda")
    assert str(e.value) == why


def test_device_scores_of_complex_dtype_are_refused_as_on_the_cpu():
    _, params = _params(3)
    arrays = ce._DeviceArrays(np)
    adapter = ce._device_adapter("cplx", lambda s, a, p: s + 1j, params, 3, lambda: arrays)
    with pytest.raises(ValueError, match="policy 'cplx' returned scores of dtype complex128; expected numbers"):
        _core._dlpack_exchange(lambda v: adapter(v, v, v, 0, 0), np.ones(3), KDLCPU)


def test_the_freshness_adapter_hands_copies_the_policy_may_keep():
    from crawleval import fresh

    params = _fresh_params(3)
    kept = []

    def keeper(age, changes, p):
        kept.append(age)
        return age * 1.0

    adapter = fresh._fresh_device_adapter("keeper", keeper, params, 3,
                                          lambda: ce._DeviceArrays(np))
    values = np.array([1.0, 2.0, 3.0])

    def call(view):
        out = adapter(view, view, 0, 0)
        np.from_dlpack(view)[:] = -7.0  # the engine rewrites its memory next epoch
        return out

    _core._dlpack_exchange(call, values, KDLCPU)
    np.testing.assert_array_equal(kept[0], [1.0, 2.0, 3.0])
