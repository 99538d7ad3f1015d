"""Private-PGM (``mbi`` 1.1.0) and OpenDP 0.16 pieces of the differentially private synthesizer
(:mod:`ppdp.tasks.sanitize.dp_synthesizer`, whose docstring says why each exists):

* :func:`mst_class`: OpenDP's MST with the selection budget made smaller by :data:`SELECTION_SLACK`
  (opendp/opendp#2789);
* :func:`aim_class`: OpenDP's AIM that stops when less than :data:`SELECTION_SLACK` of the budget is left (OpenDP's
  loop gives that crumb to one more round, whose noisy max then fails the release);
* :func:`aim_estimator` and :func:`projecting_model_class`: OpenDP's default estimator returning a model whose
  marginals are computed in NumPy (post-processing; ``mbi`` compiles JAX operations anew for every new shape);
* :func:`sample_model`: rows drawn from a fitted model with a seeded generator (a port of ``mbi``'s generator with
  its row-order bug fixed, as mbi 1.3.0 fixed it).

OpenDP and ``mbi`` (which imports JAX) are imported inside the functions that use them: heavy third-party
libraries, loaded only by a release that runs the mechanism.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

SELECTION_SLACK = 1e-9  # the selection's share of the budget is made smaller by this fraction (opendp#2789)


def mst_class():
    """OpenDP's MST with the selection budget fix for opendp/opendp#2789 (see
    :mod:`ppdp.tasks.sanitize.dp_synthesizer`)."""
    from opendp._internal import _new_pure_function  # heavy: OpenDP, loaded when a synthesizer is built
    from opendp.combinators import then_adaptive_composition
    from opendp.extras.mbi import MST
    from opendp.extras.mbi._mst import _make_mst_select
    from opendp.extras.mbi._utilities import get_associated_metric, make_noise_marginals, make_stable_marginals, prior
    from opendp.mod import binary_search_chain

    @dataclass(kw_only=True, frozen=True)
    class _MST(MST):
        """``opendp.extras.mbi.MST.make_marginals`` as OpenDP 0.16 writes it, except that the selection is given
        ``d_select * (1 - SELECTION_SLACK)``: its per-step budgets then add up to no more than ``d_select``."""

        def make_marginals(self, input_domain, input_metric, output_measure, d_in, d_out, *, marginals, model):
            d_measure = d_out * self.measure_split
            d_select = prior(prior(d_out - d_measure))
            lp_metric = get_associated_metric(output_measure)
            edges: list[tuple[str, str]] = list(itertools.combinations(input_domain.columns, 2))
            # OpenDP types the cliques as list[tuple[str, ...]] (invariant list): pairs are cliques
            t_marginals = make_stable_marginals(input_domain, input_metric, lp_metric, edges)  # type: ignore[arg-type]
            d_marginals = t_marginals.map(d_in)

            def function(qbl):
                m_select = _make_mst_select(*t_marginals.output_space, output_measure, d_in=d_marginals,
                                            d_out=d_select * (1 - SELECTION_SLACK), edges=edges, model=model,
                                            num_selections=self.num_selections)
                selected = qbl(m_select)
                m_measure = binary_search_chain(
                    lambda s: make_noise_marginals(*t_marginals.output_space, output_measure, selected, scale=s),
                    d_in=d_marginals, d_out=d_measure, T=float)
                measured = marginals.add(*qbl(m_measure))
                return measured, self.estimator(model.domain, measured.flatten(), potentials=model.potentials)

            return t_marginals >> then_adaptive_composition(
                output_measure=output_measure, d_in=t_marginals.map(d_in), d_mids=[d_select, d_measure]
            ) >> _new_pure_function(function)

    return _MST


@functools.cache
def projecting_model_class():
    """Private-PGM's ``MarkovRandomField`` whose marginals are computed in NumPy (see :func:`aim_estimator`)."""
    from mbi import Factor, MarkovRandomField  # heavy: mbi (JAX), loaded when a model is sampled

    class _NumpyMarginals(MarkovRandomField):
        """The model as ``mbi`` fits it; ``project`` gives the same marginal (up to rounding) by variable
        elimination in NumPy, in log space, instead of JAX operations compiled one by one for every new shape."""

        def project(self, attrs):
            attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
            domain = self.domain
            factors = [(tuple(f.domain.attrs), np.asarray(f.values, dtype=np.float64))
                       for f in self.potentials.arrays.values()]
            log_p = log_marginal(factors, dict(zip(domain.attrs, domain.shape)), attrs)
            log_p = log_p - _logsumexp(log_p.reshape(-1), 0)
            return Factor(domain.project(attrs), np.exp(log_p) * float(self.total))

    return _NumpyMarginals


def _logsumexp(values: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top, axis=axis)


def _aligned(attrs: tuple[str, ...], values: np.ndarray, union: tuple[str, ...]) -> np.ndarray:
    """A factor over ``attrs`` with its axes in ``union``'s order (size 1 for the attributes it lacks)."""
    present = [a for a in union if a in attrs]
    values = np.transpose(values, [attrs.index(a) for a in present])
    return values.reshape([values.shape[present.index(a)] if a in attrs else 1 for a in union])


def log_marginal(factors: list[tuple[tuple[str, ...], np.ndarray]], sizes: dict[str, int],
                  target: tuple[str, ...]) -> np.ndarray:
    """Unnormalized log-marginal over ``target`` of the model whose log-potentials are ``factors``: the other
    attributes are summed out one at a time (the one whose combined factor is smallest first)."""
    elim = sorted({a for attrs, _ in factors for a in attrs} - set(target))
    while elim:
        scopes = [set(at) for at, _ in factors]
        a = min(elim, key=lambda x: math.prod(sizes[b] for b in set().union(*[s for s in scopes if x in s])))
        elim.remove(a)
        touching = [f for f in factors if a in f[0]]
        union = tuple(sorted(set().union(*[set(at) for at, _ in touching])))
        combined = sum(_aligned(at, v, union) for at, v in touching)
        axis = union.index(a)
        factors = [f for f in factors if a not in f[0]] + [(union[:axis] + union[axis + 1:],
                                                            _logsumexp(np.asarray(combined), axis))]
    out = np.zeros(tuple(sizes[a] for a in target))
    for attrs, values in factors:
        out = out + _aligned(attrs, values, target)
    return out


def aim_estimator(domain, loss_fn, *, potentials=None):
    """OpenDP's default estimator (``mbi.estimation.mirror_descent``, its defaults) returning the fitted model as a
    :func:`projecting_model_class`: AIM scores every candidate marginal against the model in every round, and
    ``mbi`` 1.1.0 computes each out-of-model marginal with JAX operations compiled anew for every new shape
    (measured on the census demo: 2,236 compilations, 241 s of a 428 s profiled run). Post-processing of the noisy
    marginals: the privacy map is unchanged."""
    from mbi.estimation import mirror_descent  # heavy: mbi (JAX), loaded when a model is estimated

    model = mirror_descent(domain, loss_fn, potentials=potentials)
    return projecting_model_class()(potentials=model.potentials, marginals=model.marginals, total=model.total)


@functools.cache
def aim_class():
    """OpenDP's AIM with a stop for the budget's last crumbs (see :mod:`ppdp.tasks.sanitize.dp_synthesizer`)."""
    from opendp._internal import _new_pure_function  # heavy: OpenDP, loaded when a synthesizer is built
    from opendp.combinators import make_fully_adaptive_composition, make_privacy_filter
    from opendp.extras.mbi import AIM
    from opendp.extras.mbi._aim import _expand_queries, _make_aim_marginal
    from opendp.extras.mbi._utilities import get_associated_metric, make_stable_marginals, prior

    @dataclass(kw_only=True, frozen=True)
    class _AIM(AIM):
        """``opendp.extras.mbi.AIM.make_marginals`` as OpenDP 0.16 writes it, except that it stops when what is
        left of the budget is below ``d_out * SELECTION_SLACK`` (rounding crumbs: a round is at least ``d_out``
        / rounds). OpenDP's loop would give that crumb to one more round, whose noisy max then finds no noise
        scale and raises (OpenDP expects a ValueError there; the search raises an OpenDPException), failing the
        release. Stopping spends slightly less, never more."""

        def make_marginals(self, input_domain, input_metric, output_measure, d_in, d_out, *, marginals, model):
            queries = _expand_queries(self.queries, input_domain.columns)
            algorithm = replace(self, queries=queries)
            t_marginals = make_stable_marginals(input_domain, input_metric, get_associated_metric(output_measure),
                                                [q.by for q in queries])
            d_marginals = t_marginals.map(d_in)
            rounds = algorithm.rounds or (16 * len(input_domain.columns))

            def function(qbl):
                current_model, current_marginals = model, marginals.copy()
                d_step, d_spent = d_out / rounds, 0.0
                while d_step > d_out * SELECTION_SLACK:
                    m_step = _make_aim_marginal(*t_marginals.output_space, output_measure, d_marginals, d_step,
                                                marginals=current_marginals, model=current_model,
                                                max_size=algorithm.max_size * (d_spent + d_step) / d_out,
                                                algorithm=algorithm)
                    if not m_step:
                        break
                    current_marginals, current_model, is_significant = qbl(m_step)
                    if not is_significant:
                        d_step *= 4
                    d_spent = qbl.privacy_loss(d_marginals)
                    d_step = min(d_step, max(prior(d_out - d_spent), 0))
                return current_marginals, current_model

            return t_marginals >> make_privacy_filter(
                make_fully_adaptive_composition(*t_marginals.output_space, output_measure),
                d_in=d_marginals, d_out=d_out) >> _new_pure_function(function)

    return _AIM


def sample_model(model, total: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``total`` rows drawn from a fitted Private-PGM model, as index codes per attribute.

    A port of ``mbi.MarkovRandomField.synthetic_data`` (mbi 1.1.0, method "round") that draws from ``rng`` rather
    than NumPy's global generator: the first attribute of the junction tree's elimination order is drawn by
    randomized rounding of its marginal, each next one conditionally on the attributes it depends on, by
    stratified draws within each group of rows that share them, handed to the group's rows in a random order (mbi
    1.1.0 handed them out in row order, which correlated every column with the ones drawn before it; fixed upstream
    in mbi 1.3.0, which OpenDP 0.16 does not use).
    """
    from mbi import junction_tree, marginal_oracles  # heavy: mbi (JAX), loaded when a model is sampled

    domain = model.domain
    cliques = [set(cl) for cl in model.cliques]
    jtree, elimination_order = junction_tree.make_junction_tree(domain, cliques)
    marginals = marginal_oracles.message_passing_stable(model.potentials.expand(list(jtree.nodes)))

    def rounded(counts: np.ndarray) -> np.ndarray:
        counts = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
        options = np.arange(counts.size)
        if counts.sum() <= 0:
            counts = np.ones_like(counts)
        counts = counts * (total / counts.sum())
        frac, whole = np.modf(counts)
        whole = whole.astype(np.int64)
        extra = total - int(whole.sum())
        if extra > 0:
            whole[rng.choice(options, extra, replace=False, p=frac / frac.sum())] += 1
        values = np.repeat(options, whole)
        rng.shuffle(values)
        return values

    data: dict[str, np.ndarray] = {}
    order = list(elimination_order[::-1])
    first = order[0]
    data[first] = rounded(np.asarray(marginals.project((first,)).datavector(flatten=False)))
    used = {first}
    for col in order[1:]:
        relevant = used.intersection(set().union(*[cl for cl in cliques if col in cl]))
        proj = tuple(relevant)
        used.add(col)
        if not proj:
            data[col] = rounded(np.asarray(marginals.project((col,)).datavector(flatten=False)))
            continue
        current = np.stack([data[c] for c in proj], -1)
        marg = np.asarray(marginals.project(proj + (col,)).datavector(flatten=False), dtype=np.float64)
        parents = marg.sum(axis=-1, keepdims=True)
        cdfs = np.divide(marg, parents, out=np.zeros_like(marg), where=parents != 0).cumsum(axis=-1)
        uniques, inverse, counts = np.unique(current, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        # the rows of each group in a random order: mbi 1.1.0 took them in row order, so the stratified draws handed
        # a group's low values to its first rows, and every column drawn so far leaked into the next (relations the
        # model does not hold; mbi's maintainer fixed the same in mbi 1.3.0)
        perm = np.lexsort((rng.random(total), inverse))
        starts = np.zeros(len(counts), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        ranks = np.empty(total, dtype=np.int64)
        ranks[perm] = np.arange(total) - starts[inverse[perm]]
        u = (ranks + rng.random(total)) / counts[inverse]
        unique_cdfs = cdfs[tuple(uniques.T)]
        choices = np.empty(total, dtype=np.int64)
        u_sorted = u[perm]
        start = 0
        for i, count in enumerate(counts):
            end = start + count
            picked = np.searchsorted(unique_cdfs[i], u_sorted[start:end], side="right")
            choices[perm[start:end]] = np.minimum(picked, domain[col] - 1)
            start = end
        data[col] = choices
    return data
