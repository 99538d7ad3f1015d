"""The faster routes behind the Adult release (issue 10): each gives what the plain route gives.

* condensation's Gram-matrix synthesis of groups with fewer rows than columns equals the covariance route with
  the same draws and the same eigenvector signs (up to rounding), keeps each group's mean and stays in the
  span of the group's own centred rows;
* the encoder maps a text or categorical column once per distinct value: the same matrix as mapping every row
  (the object-dtype route);
* :func:`ppdp.tasks.core.threads.single_threaded_blas` limits BLAS to one thread inside, in the main thread or a
  worker thread, and restores the setting after;
* every native thread pool a run loads (BLAS and OpenMP, those loaded late by scikit-learn and SciPy included)
  runs one thread inside a Prefect step, in the default environment; the Python API limits them during a call
  and restores the caller's after it.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.schemas.base import ColumnKind
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.threads import single_threaded_blas
from ppdp.tasks.sanitize.condensation import _gram_route, _sign_weights, synthesize


def covariance_route(x: np.ndarray, groups: np.ndarray, rng: np.random.Generator, distribution: str) -> np.ndarray:
    """The d x d route for every group, signs fixed by ``_sign_weights``: what the Gram route must reproduce."""
    n, d = x.shape
    out = np.empty_like(x)
    order = np.argsort(groups, kind="stable")
    ids, starts, counts = np.unique(groups[order], return_index=True, return_counts=True)
    for size in np.unique(counts):
        sel = np.flatnonzero(counts == size)
        rows = order[starts[sel][:, None] + np.arange(size)[None, :]]
        block = x[rows]
        mean = block.mean(axis=1, keepdims=True)
        centred = block - mean
        eigval, eigvec = np.linalg.eigh(np.einsum("gsi,gsj->gij", centred, centred) / size)
        eigvec = eigvec * np.where(np.einsum("gik,i->gk", eigvec, _sign_weights(d)) < 0, -1.0, 1.0)[:, None, :]
        spread = 1.0 if distribution == "gaussian" else 3.0
        draw = rng.standard_normal((len(sel), size, d)) if distribution == "gaussian" else \
            rng.uniform(-1.0, 1.0, (len(sel), size, d))
        draw = draw * np.sqrt(spread * np.clip(eigval, 0.0, None))[:, None, :]
        draw -= draw.mean(axis=1, keepdims=True)
        out[rows] = np.einsum("gsk,gik->gsi", draw, eigvec) + mean
    return out


@pytest.mark.parametrize("distribution", ["uniform", "gaussian"])
@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(2, 9), min_size=1, max_size=6), extra=st.integers(1, 6),
       seed=st.integers(0, 2**16))
def test_gram_route_equals_the_covariance_route(distribution, sizes, extra, seed):
    rng = np.random.default_rng(seed)
    d = max(48, 2 * max(sizes)) + extra
    assert all(_gram_route(size, d) for size in sizes)
    groups = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    x = rng.normal(size=(len(groups), d)) * rng.uniform(0.1, 5.0, d)
    got = synthesize(x, groups, np.random.default_rng(seed + 1), distribution)
    want = covariance_route(x, groups, np.random.default_rng(seed + 1), distribution)
    # rounding only, amplified where two eigenvalues are close
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(x).max())
    for g in np.unique(groups):
        m = groups == g
        np.testing.assert_allclose(got[m].mean(axis=0), x[m].mean(axis=0), atol=1e-9 * np.abs(x).max())
        # a group's synthetic rows lie in the affine hull of its rows: no spread where the group has none
        centred = x[m] - x[m].mean(axis=0)
        basis = np.linalg.svd(centred, full_matrices=False)[2]
        residual = (got[m] - x[m].mean(axis=0)) @ (np.eye(d) - basis.T @ basis)
        assert np.abs(residual).max() < 1e-8 * max(1.0, np.abs(x).max())


def test_gram_route_on_one_hot_columns_keeps_indicator_sums():
    # one-hot blocks (as the encoder writes nominal columns): every row's block sums to one, so every synthetic
    # row's block must too (a linear constraint the group satisfies is kept)
    rng = np.random.default_rng(3)
    n, cats = 60, 7
    onehot = np.eye(cats)[rng.integers(0, cats, n)]
    x = np.hstack([rng.normal(size=(n, 3)), onehot, np.eye(44)[rng.integers(0, 44, n)]])
    groups = np.repeat(np.arange(10), 6)  # 6 rows, 54 columns
    assert _gram_route(6, x.shape[1])
    y = synthesize(x, groups, np.random.default_rng(0))
    np.testing.assert_allclose(y[:, 3:3 + cats].sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(y[:, 3 + cats:].sum(axis=1), 1.0, atol=1e-9)
    assert np.abs(y - x).max() > 0.1  # synthesized, not copied


def test_mixed_group_sizes_take_both_routes_and_same_seed_same_output():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(150, 60))
    groups = np.r_[np.repeat(np.arange(10), 5), np.repeat(np.arange(10, 12), 50)]
    assert _gram_route(5, 60) and not _gram_route(50, 60)
    a = synthesize(x, groups, np.random.default_rng(1))
    b = synthesize(x.copy(), groups, np.random.default_rng(1), inplace=True)
    np.testing.assert_array_equal(a, b)
    for g in np.unique(groups):
        m = groups == g
        np.testing.assert_allclose(a[m].mean(axis=0), x[m].mean(axis=0), atol=1e-9)


def test_covariance_route_keeps_earlier_records_bit_for_bit():
    # the synthesis as it was before the Gram route (LAPACK's eigenvector signs): groups that do not take the Gram
    # route must come out exactly as they did, so that a seed still gives the release it gave
    rng = np.random.default_rng(11)
    x = rng.normal(size=(400, 12)) @ rng.normal(size=(12, 12))
    groups = rng.permutation(np.repeat(np.arange(40), 10))
    draws = np.random.default_rng(4)
    want = np.empty_like(x)
    order = np.argsort(groups, kind="stable")
    rows = order.reshape(40, 10)
    block = x[rows]
    mean = block.mean(axis=1, keepdims=True)
    centred = block - mean
    eigval, eigvec = np.linalg.eigh(np.einsum("gsi,gsj->gij", centred, centred) / 10)
    draw = draws.uniform(-1.0, 1.0, (40, 10, 12)) * np.sqrt(3.0 * np.clip(eigval, 0.0, None))[:, None, :]
    draw -= draw.mean(axis=1, keepdims=True)
    want[rows] = np.einsum("gsk,gik->gsi", draw, eigvec) + mean
    assert not _gram_route(10, 12)
    np.testing.assert_array_equal(synthesize(x, groups, np.random.default_rng(4)), want)


# -- encoder: per distinct value --------------------------------------------------------------------------------
_WORDS = st.sampled_from(["a", "b", "c", "Bachelors", "HS-grad", "Masters", "", " x", "10", "9"])


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(_WORDS, st.none()), min_size=1, max_size=40),
       other=st.lists(st.one_of(_WORDS, st.none()), min_size=1, max_size=40))
def test_text_columns_encode_as_the_row_by_row_route(values, other):
    order = ["", " x", "10", "9", "a", "b", "c", "Bachelors", "HS-grad", "Masters"]
    kinds = {"nom": ColumnKind.nominal, "ord": ColumnKind.ordinal}

    def frame(vals, dtype):
        col = pd.Series(vals, dtype=dtype)
        return pd.DataFrame({"nom": col, "ord": col.copy()})

    fitted = {}
    for dtype in ("object", "string", "category"):
        enc = TableEncoder(columns=["nom", "ord"], kinds=kinds, orders={"ord": order}).fit(frame(values, dtype))
        fitted[dtype] = (enc.transform(frame(values, dtype)), enc.transform(frame(other, dtype)))
    for dtype in ("string", "category"):  # object columns are mapped row by row
        np.testing.assert_array_equal(fitted[dtype][0], fitted["object"][0])
        np.testing.assert_array_equal(fitted[dtype][1], fitted["object"][1])


# -- one BLAS thread --------------------------------------------------------------------------------------------
def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_single_threaded_blas_limits_inside_and_restores_after():
    before = _blas_threads()
    with single_threaded_blas():
        assert all(n == 1 for n in _blas_threads())
        with single_threaded_blas():  # nested: still one, and leaving the inner block keeps the limit
            pass
        assert all(n == 1 for n in _blas_threads())
    assert _blas_threads() == before


def test_single_threaded_blas_in_a_worker_thread_and_after_it():
    # a worker thread (a Prefect task's) gets its limit when no other thread holds threadpoolctl's control, and
    # leaves the process as it found it
    before, seen = _blas_threads(), []

    def work():
        with single_threaded_blas():
            seen.extend(_blas_threads())
            np.linalg.eigh(np.eye(50)[None].repeat(3, axis=0))

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert seen and all(n == 1 for n in seen)
    assert _blas_threads() == before
    with single_threaded_blas():  # and the main thread can still set it afterwards
        assert all(n == 1 for n in _blas_threads())


_PROCESS_WIDE = """
import threading
import numpy as np
from threadpoolctl import threadpool_info
from ppdp.tasks.core.threads import one_native_thread_from_now_on, single_threaded_blas

def threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

assert threads() and max(threads()) > 1, threads()
assert one_native_thread_from_now_on()
first_in, second_in, first_out, seen = threading.Event(), threading.Event(), threading.Event(), []

def first():  # enters first: holds threadpoolctl's control, and restores what it found when it leaves
    with single_threaded_blas():
        first_in.set()
        second_in.wait(10)
    first_out.set()

def second():  # enters while the first holds control (its own call does nothing), outlives the first's block
    with single_threaded_blas():
        second_in.set()
        first_out.wait(10)
        seen.extend(threads())

a = threading.Thread(target=first)
a.start()
first_in.wait(10)
b = threading.Thread(target=second)
b.start()
for w in (a, b):
    w.join(30)
assert seen == [1] * len(seen) and seen, seen
assert threads() == [1] * len(threads()), threads()
print("ok")
"""


def test_one_native_thread_from_now_on_holds_across_threads():
    import subprocess
    import sys

    env = {**_default_environment(), "OPENBLAS_NUM_THREADS": "2"}  # two BLAS threads to begin with
    out = subprocess.run([sys.executable, "-c", _PROCESS_WIDE], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


# -- every native pool, wherever it is loaded (issue 33) ----------------------------------------------------------
def _default_environment() -> dict[str, str]:
    """This process's environment without any thread setting: what a user's shell gives ``ppdp``."""
    import os

    from ppdp.tasks.core.threads import LIMIT_VARIABLE, THREAD_VARIABLES

    return {k: v for k, v in os.environ.items() if k not in (*THREAD_VARIABLES, LIMIT_VARIABLE)}


def _run_script(script: str, timeout: int = 240) -> str:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                         env=_default_environment())
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


_IN_A_STEP = """
import json
from ppdp.flows.settings import apply_settings
apply_settings()  # what the CLI, the deployments and the Python API's flows do first
from prefect import flow
from prefect.testing.utilities import prefect_test_harness
from ppdp.flows.steps import step
from ppdp.tasks.core.threads import THREAD_VARIABLES
import os

def pools():
    from threadpoolctl import threadpool_info
    return sorted((lib["internal_api"], lib["num_threads"]) for lib in threadpool_info())

def nearest(n):
    import numpy as np
    from sklearn.neighbors import NearestNeighbors  # loads SciPy's OpenBLAS and OpenMP inside the step
    x = np.random.default_rng(n).normal(size=(2000, 40))
    NearestNeighbors(n_neighbors=1, algorithm="brute").fit(x).kneighbors(x[:500])
    return pools()

work = step(nearest, "nearest")

@flow
def two_steps():
    futures = [work.submit(n) for n in range(4)]  # in the thread runner's worker threads, two at a time or more
    return [f.result() for f in futures]

with prefect_test_harness():
    seen = two_steps()
print(json.dumps({"steps": seen, "main": pools(), "env": {k: os.environ.get(k) for k in THREAD_VARIABLES}}))
"""


@pytest.mark.slow  # a whole Prefect flow in a fresh process: about 17 s
def test_every_native_pool_runs_one_thread_inside_a_step_in_the_default_environment():
    import json

    out = json.loads(_run_script(_IN_A_STEP).strip().splitlines()[-1])
    for pools in out["steps"]:
        kinds = {kind for kind, _ in pools}
        assert {"openblas", "openmp"} <= kinds, pools  # scikit-learn's OpenMP and a BLAS were loaded (can fail)
        assert all(threads == 1 for _, threads in pools), pools
    assert out["env"]["OMP_NUM_THREADS"] == "1" and out["env"]["OPENBLAS_NUM_THREADS"] == "1"


_API_CALL = """
import json
import numpy as np  # the caller's process: numpy loaded first, with the machine's threads
import pandas as pd
from threadpoolctl import threadpool_info, threadpool_limits
import ppdp
import ppdp.tasks.privacy.measure as measure

def blas():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

threadpool_limits(limits=2)  # what the caller chose (two cores on this machine, or more)
before, inside = blas(), []
original = measure.measure_table

def spy(*args, **kwargs):
    inside.extend(lib["num_threads"] for lib in threadpool_info())
    return original(*args, **kwargs)

measure.measure_table = spy
frame = pd.DataFrame({"age": np.arange(40) % 4, "zip": ["a", "b"] * 20})
ppdp.validate(frame, quasi_identifiers=["age", "zip"], k=2)
print(json.dumps({"before": before, "inside": inside, "after": blas()}))
"""


def test_the_python_api_limits_native_pools_during_a_call_and_restores_the_callers_after():
    import json

    out = json.loads(_run_script(_API_CALL).strip().splitlines()[-1])
    assert out["before"] and max(out["before"]) == 2, out  # the test can fail: the caller had two
    assert out["inside"] and set(out["inside"]) == {1}, out
    assert out["after"] == out["before"], out
