"""Reproduce Table 1 of Matatov, Rokach & Maimon (paper 001, DMPD): accuracy vs. k-anonymity level.

    .venv/bin/python -m benchmarks.dmpd_table_1 [--datasets Adult German ...] [--quick] [--output PATH]
                                                [--missing {value,impute}]

Protocol (paper section 5.1 and 5.3), per data set: 5x2 CV (5 repetitions, each a random stratified 50/50
split, both halves used once as the training set; repetition i seeded with ``seed + i``). On the training half:
fit the supervised :class:`~ppdp.tasks.core.dmpd.Recoding` (Fayyad-Irani MDLP on numeric features, min_count = 1
so that one recoding and one fitness cache serve every k of the fold), rank the coded features by information
gain, take the top 9 as the quasi-identifier (top 8 for Nursery and Pima), and run
:func:`~ppdp.tasks.core.dmpd.search_partition` for k = 1 (no constraint) and the four k of the paper (Adult
50/100/200/500, Nursery 50/100/150/200, the others 10/20/30/50). The runs of one outer fold and inducer share one
:class:`~ppdp.tasks.core.dmpd.Cache` and one GA seed. The chosen partition's
:class:`~ppdp.tasks.core.dmpd.PartitionClassifier`, fitted on the whole training half, is scored on the test
half coded by the same recoding. When no valid partition keeping a feature exists, the fold scores the majority
class (the empty partition; counted in the output).

Baselines (the paper's "accuracy of the original dataset", inducer details unstated; WEKA J4.8 and NaiveBayes
are implied by section 5.4):

* ``raw``: the inducer on the original features without discretisation - naive Bayes with a Gaussian per class
  for numeric features and Laplace-corrected frequencies for nominal ones (WEKA NaiveBayes defaults); for C4.5,
  scikit-learn's entropy tree (min 2 rows per leaf, no pruning: scikit-learn has no C4.5 pruning) on the numeric
  features (NaN -> training median) and one-hot nominal features (missing = its own category).
* ``coded``: our inducer on all recoded features in one subset (no partition, no anonymity).

``*`` marks a cell where the raw baseline is significantly more accurate by the combined 5x2 CV F-test
(Alpaydin 1999) at 95% (F > F(10, 5) critical value, about 4.74) and ``+`` where the coded baseline is.
Missing values (``--missing``): ``value`` (default) keeps them, so the recoding gives them the reserved last code
and the k-anonymity check counts that code as one more category; ``impute`` replaces them first, in each outer
fold, by the training half's mode (nominal) or median (numeric) in both halves (WEKA's ReplaceMissingValues, but
with the median rather than the mean), before the baselines and the recoding - a sensitivity check, since the
paper does not say how it treated missing values.

Writes ``benchmarks/results/dmpd_table_1.md`` (or ``--output``). Credit, Wisconsin (699 rows) and Portfolio
are not in ``../shared/data`` and are left out.

``--smoke`` (``make bench-smoke``): Adult only, 300 rows of each file (generated stand-ins where ../shared/data is
absent), one repetition, population 6, 2 generations, 2 inner folds; the results file goes to a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import datasets, smoke
from ppdp.tasks.core import dmpd

RESULTS = Path(__file__).resolve().parent / "results"
INDUCERS = ("tree", "naive_bayes")
INDUCER_NAMES = {"tree": "C4.5", "naive_bayes": "Naive Bayes"}
K_SMALL = (10, 20, 30, 50)
HAND_WRITTEN = "## Differences from the paper (written by hand"

# Table 1 of the paper, %: (baseline, k=1, k2, k3, k4, k5), and where the paper prints "*" (column k values)
PAPER = {
    ("Adult", "tree"): (85.58, 86.59, 83.03, 83.00, 82.63, 82.99),
    ("Adult", "naive_bayes"): (82.68, 84.87, 81.81, 81.41, 81.47, 81.19),
    ("German", "tree"): (69.88, 73.23, 71.86, 70.78, 71.12, 63.01),
    ("German", "naive_bayes"): (73.81, 75.03, 73.79, 73.71, 71.26, 69.84),
    ("Vote", "tree"): (96.23, 96.35, 96.26, 96.35, 95.04, 96.70),
    ("Vote", "naive_bayes"): (90.78, 96.26, 96.43, 96.52, 96.61, 96.52),
    ("Heart", "tree"): (74.89, 84.03, 79.18, 78.96, 77.31, 74.78),
    ("Heart", "naive_bayes"): (84.89, 82.61, 79.93, 77.69, 78.06, 74.93),
    ("Cmc", "tree"): (50.90, 56.59, 52.53, 51.51, 51.02, 48.30),
    ("Cmc", "naive_bayes"): (48.78, 54.04, 54.04, 52.73, 52.12, 48.07),
    ("Pima", "tree"): (72.09, 78.20, 77.75, 77.62, 76.79, 75.85),
    ("Pima", "naive_bayes"): (75.20, 77.75, 77.75, 78.02, 78.41, 78.30),
    ("Nursery", "tree"): (96.16, 97.13, 92.64, 91.15, 90.86, 88.91),
    ("Nursery", "naive_bayes"): (90.08, 90.25, 90.24, 90.27, 90.00, 89.46),
}
PAPER_STARS = {
    ("Adult", "tree"): {50, 100, 200, 500},
    ("Adult", "naive_bayes"): {50, 100, 200, 500},
    ("Heart", "naive_bayes"): {50},
    ("Cmc", "naive_bayes"): {50},
    ("German", "naive_bayes"): {50},
    ("Nursery", "tree"): {50, 100, 150},
}


# ---------------------------------------------------------------------------------------------------------------
# data


@dataclass
class Data:
    frame: pd.DataFrame  # features only, '?' -> NaN
    y: np.ndarray
    classes: list[str]
    numeric: list[bool]
    n_qi: int
    ks: tuple[int, ...]


def _read(rel: str) -> pd.DataFrame:
    path = datasets.SHARED / rel
    if not path.is_file():
        raise FileNotFoundError(f"{path} (the shared research data is not on this machine)")
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _make(frame: pd.DataFrame, cls: str, numeric_cols: set[str], n_qi: int = 9, ks=K_SMALL,
          label=None) -> Data:
    frame = frame.replace("?", np.nan)
    target = frame[cls] if label is None else label(frame[cls])
    classes = sorted(target.unique())
    y = pd.Categorical(target, categories=classes).codes.astype(np.int64)
    feats = frame.drop(columns=[cls])
    for c in feats.columns:
        if c in numeric_cols:
            feats[c] = pd.to_numeric(feats[c], errors="coerce")
    return Data(feats.reset_index(drop=True), y, [str(c) for c in classes],
                [c in numeric_cols for c in feats.columns], n_qi, tuple(ks))


def adult() -> Data:
    """UCI Adult, training and test files merged, rows with '?' dropped: 45,222 rows (as Fung et al. use)."""
    frame = pd.concat([_read("adult/adult.csv"), _read("adult/adult_test.csv")], ignore_index=True)
    frame = frame[~frame.eq("?").any(axis=1)].reset_index(drop=True)
    frame["income"] = frame["income"].str.rstrip(".")
    num = {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}
    return _make(frame, "income", num, ks=(50, 100, 200, 500))


def german() -> Data:
    """UCI German credit, the original version (13 nominal, 7 numeric attributes)."""
    num = {"duration_months", "credit_amount", "installment_rate", "residence_since", "age", "existing_credits",
           "num_dependents"}
    return _make(_read("german/german.csv"), "class", num)


def vote() -> Data:
    """Congressional votes 1984; '?' (did not vote) is the missing code."""
    return _make(_read("vote/vote.csv"), "class", set())


def heart() -> Data:
    """Cleveland heart disease (processed), class = num > 0; sex, cp, fbs, restecg, exang, slope, thal nominal."""
    num = {"age", "trestbps", "chol", "thalach", "oldpeak", "ca"}
    return _make(_read("heart_cleveland/heart_cleveland.csv"), "num", num,
                 label=lambda s: pd.Series(np.where(pd.to_numeric(s) > 0, "disease", "none")))


def cmc() -> Data:
    """Contraceptive method choice; wife's age and number of children numeric, the rest nominal (UCI)."""
    return _make(_read("cmc/cmc.csv"), "contraceptive_method", {"wife_age", "num_children"})


def pima() -> Data:
    frame = _read("pima/pima.csv")
    return _make(frame, "class", {c for c in frame.columns if c != "class"}, n_qi=8)


def nursery() -> Data:
    return _make(_read("nursery/nursery.csv"), "class", set(), n_qi=8, ks=(50, 100, 150, 200))


LOADERS = {"Adult": adult, "German": german, "Vote": vote, "Heart": heart, "Cmc": cmc, "Pima": pima,
           "Nursery": nursery}


def impute_missing(tr: pd.DataFrame, te: pd.DataFrame, numeric: list[bool]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replace NaN in both halves by the training half's median (numeric) or mode (nominal; ties -> the first in
    sorted order). A column with no value in the training half is left as it is."""
    tr, te = tr.copy(), te.copy()
    for col, num in zip(tr.columns, numeric):
        present = tr[col].dropna()
        if present.empty:
            continue
        fill = float(present.median()) if num else present.mode().iloc[0]
        tr[col] = tr[col].fillna(fill)
        te[col] = te[col].fillna(fill)
    return tr, te


# ---------------------------------------------------------------------------------------------------------------
# baselines on the original features


def raw_naive_bayes(tr: pd.DataFrame, ytr: np.ndarray, te: pd.DataFrame, numeric: list[bool],
                    n_classes: int) -> np.ndarray:
    """Gaussian per class for numeric columns (missing ignored), Laplace frequencies for nominal ones."""
    ny = np.bincount(ytr, minlength=n_classes)
    s = np.tile(np.log((ny + 1.0) / (len(ytr) + n_classes)), (len(te), 1))
    for col, num in zip(tr.columns, numeric):
        if num:
            x, xt = tr[col].to_numpy(float), te[col].to_numpy(float)
            for c in range(n_classes):
                v = x[(ytr == c) & ~np.isnan(x)]
                mu = v.mean() if len(v) else 0.0
                spread = float(np.nanmax(x) - np.nanmin(x)) if (~np.isnan(x)).any() else 0.0
                sd = max(v.std(ddof=1) if len(v) > 1 else 0.0, spread / 6000, 1e-9)  # floor as WEKA's precision
                ll = -0.5 * ((xt - mu) / sd) ** 2 - np.log(sd * np.sqrt(2 * np.pi))
                s[:, c] += np.where(np.isnan(xt), 0.0, ll)
        else:
            a, b = tr[col].fillna("\0missing").astype(str), te[col].fillna("\0missing").astype(str)
            cats = sorted(a.unique())
            ca = pd.Categorical(a, categories=cats).codes
            cb = pd.Index(cats).get_indexer(b)
            card = len(cats) + 1
            cb = np.where(cb < 0, card - 1, cb)
            for c in range(n_classes):
                cnt = np.bincount(ca[ytr == c], minlength=card)
                s[:, c] += np.log((cnt[cb] + 1.0) / (ny[c] + card))
    return np.argmax(s, axis=1)


def raw_tree(tr: pd.DataFrame, ytr: np.ndarray, te: pd.DataFrame, numeric: list[bool], seed: int) -> np.ndarray:
    from sklearn.tree import DecisionTreeClassifier

    def matrix(frame: pd.DataFrame, ref: pd.DataFrame) -> np.ndarray:
        parts = []
        for col, num in zip(ref.columns, numeric):
            if num:
                med = np.nanmedian(ref[col].to_numpy(float))
                parts.append(np.nan_to_num(frame[col].to_numpy(float), nan=med)[:, None])
            else:
                cats = sorted(ref[col].fillna("\0missing").astype(str).unique())
                codes = pd.Index(cats).get_indexer(frame[col].fillna("\0missing").astype(str))
                parts.append((codes[:, None] == np.arange(len(cats))[None, :]).astype(float))
        return np.hstack(parts)

    model = DecisionTreeClassifier(criterion="entropy", min_samples_leaf=2, random_state=seed)
    model.fit(matrix(tr, tr), ytr)
    return model.predict(matrix(te, tr))


# ---------------------------------------------------------------------------------------------------------------
# experiment


@dataclass
class Cell:
    acc: list[float] = field(default_factory=list)  # per outer fold (rep-major)
    no_valid: int = 0
    kept: list[int] = field(default_factory=list)  # features kept
    subsets: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    fitness: list[float] = field(default_factory=list)  # inner-CV accuracy of the chosen partition
    valid_acc: list[float] = field(default_factory=list)  # test accuracy of the folds with a valid partition
    qi_alone: list[int] = field(default_factory=list)  # quasi-identifiers valid on their own at this k


def stratified_halves(y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    first = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        first[idx[: len(idx) // 2 + (rng.random() < 0.5) * (len(idx) % 2)]] = True
    return np.flatnonzero(first), np.flatnonzero(~first)


def f_test(acc_a: list[float], acc_b: list[float]) -> float:
    """Combined 5x2 CV F statistic (Alpaydin 1999) for two accuracy lists in (rep, fold) order."""
    p = (np.asarray(acc_a) - np.asarray(acc_b)).reshape(-1, 2)
    s2 = ((p - p.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    num = (p**2).sum()
    if num == 0:
        return 0.0
    return float(num / (2 * s2.sum())) if s2.sum() > 0 else float("inf")


def run_dataset(name: str, data: Data, reps: int, seed: int, ga: dict, missing: str = "value") -> dict:
    n_classes = len(data.classes)
    feats = list(data.frame.columns)
    cells: dict[tuple[str, str], Cell] = {}
    for ind in INDUCERS:
        for col in ["raw", "coded", 1, *data.ks]:
            cells[(ind, str(col))] = Cell()
    t0 = time.perf_counter()
    load_before = os.getloadavg()
    loads = []
    missing_smallest: list[int] = []
    for rep in range(reps):
        halves = stratified_halves(data.y, np.random.default_rng(seed + rep))
        for fold in range(2):
            tr, te = halves[fold], halves[1 - fold]
            ftr, fte = data.frame.iloc[tr], data.frame.iloc[te]
            if missing == "impute":
                ftr, fte = impute_missing(ftr, fte, data.numeric)
            ytr, yte = data.y[tr], data.y[te]
            rec = dmpd.Recoding.fit(ftr, ytr, feats, data.numeric, min_count=1)
            ctr, cte = rec.codes(ftr), rec.codes(fte)
            ig = dmpd.information_gain(ctr, rec.cards, ytr, n_classes)
            qi = sorted(np.argsort(-ig, kind="stable")[: data.n_qi].tolist())
            ga_seed = 1000 * (seed + rep) + fold
            qi_level = [dmpd.anonymity_level(ctr, [j], rec.cards) for j in qi]
            missing_rows = [int((ctr[:, j] == rec.cards[j] - 1).sum()) for j in qi]
            missing_smallest.append(sum(m == lv for m, lv in zip(missing_rows, qi_level)))
            for ind in INDUCERS:
                raw = (raw_tree(ftr, ytr, fte, data.numeric, ga_seed) if ind == "tree"
                       else raw_naive_bayes(ftr, ytr, fte, data.numeric, n_classes))
                cells[(ind, "raw")].acc.append(float(np.mean(raw == yte)))
                whole = dmpd.PartitionClassifier([range(len(feats))], rec.cards, n_classes, ind).fit(ctr, ytr)
                cells[(ind, "coded")].acc.append(float(np.mean(whole.predict(cte) == yte)))
                cache = dmpd.Cache()
                for k in (1, *data.ks):
                    cell = cells[(ind, str(k))]
                    cell.qi_alone.append(sum(lv >= k for lv in qi_level))
                    try:
                        res = dmpd.search_partition(ctr, rec.cards, ytr, n_classes, quasi_identifiers=qi, k=k,
                                                    inducer=ind, seed=ga_seed, cache=cache, **ga)
                    except dmpd.NoValidPartition:
                        cell.no_valid += 1
                        cell.acc.append(float(np.mean(yte == np.bincount(ytr).argmax())))
                        continue
                    clf = dmpd.PartitionClassifier(res.partition, rec.cards, n_classes, ind).fit(ctr, ytr)
                    cell.acc.append(float(np.mean(clf.predict(cte) == yte)))
                    cell.valid_acc.append(cell.acc[-1])
                    cell.kept.append(sum(len(g) for g in res.partition))
                    cell.subsets.append(len(res.partition))
                    cell.seconds.append(res.seconds)
                    cell.fitness.append(res.fitness)
            loads.append(os.getloadavg()[0])
            print(f"  {name}: repetition {rep + 1} fold {fold + 1} done at {time.perf_counter() - t0:.0f} s",
                  flush=True)
    return {"cells": cells, "seconds": time.perf_counter() - t0, "load_before": load_before,
            "load_after": os.getloadavg(), "loads": loads, "n": len(data.y), "d": len(feats),
            "n_classes": n_classes, "ks": data.ks, "n_qi": data.n_qi, "missing_smallest": missing_smallest}


# ---------------------------------------------------------------------------------------------------------------
# report


def _fmt(acc: list[float]) -> str:
    a = 100 * np.asarray(acc)
    return f"{a.mean():.2f} ± {a.std(ddof=1) if len(a) > 1 else 0.0:.2f}"


def render(results: dict[str, dict], ga: dict, reps: int, seed: int, argv_note: str, missing: str = "value") -> str:
    from scipy.stats import f as f_dist

    crit = float(f_dist.ppf(0.95, 2 * reps, reps))
    out = ["# DMPD Table 1 reproduction (paper 001, Matatov, Rokach & Maimon 2010): accuracy vs. k-anonymity", "",
           f"Generated by `python -m benchmarks.dmpd_table_1{argv_note}`. Everything below is measured by that run;",
           "the paper's figures are its Table 1.", "",
           "## Settings", "",
           f"* 5x2 CV as in the paper's 5.1: {reps} repetition(s) of a stratified 50/50 split (seed {seed} + i), each "
           "half the training set once. Recoding (MDLP, min_count = 1), information-gain ranking and the "
           "quasi-identifier (top 9; top 8 for Nursery and Pima) are fitted on each training half only.",
           f"* GA (`ppdp.tasks.core.dmpd.search_partition`): population {ga['population']} and generations "
           f"{ga['generations']} (the paper's 5.5 defaults); p_crossover {ga['p_crossover']} and p_mutation "
           f"{ga['p_mutation']} per feature (ours: the paper gives no rates); fitness = {ga['inner_folds']}-fold "
           "stratified inner CV accuracy on the training half, 0 if invalid (the fold count is ours: the paper's n "
           "is unstated); binary tournament with Deb's feasibility rule between invalid partitions and elitism 2 "
           "(ours: the paper says only that selection favours fitter candidates); the paper's group-wise crossover.",
           "* Mutation: each feature, with probability p_mutation, moves from its subset to another subset drawn at "
           "random, and in a partition of one subset it forms a subset of its own (both the paper's, 4.1). Ours "
           "besides: the target is drawn uniformly among the other subsets, a new subset of its own and the "
           "left-out set, and a left-out feature can move too (to an existing or a new subset); the paper names "
           "only moves from one subset to another.",
           f"* Initial population (ours; the paper does not say how it builds it): the one-subset partition of all "
           f"features, the partition of singletons of every feature valid alone at k (a non-quasi-identifier, or a "
           f"quasi-identifier whose own smallest class is >= k; the other features left out), and "
           f"{ga['population'] - 2} random partitions (a number of subsets g drawn from 1..d; each feature left out "
           "with a probability drawn per individual from U(0, 0.5), else put in one of the g subsets drawn "
           f"uniformly). The GA's random generator is seeded with 1000 x ({seed} + i) + f (repetition i, outer "
           "fold f = 0, 1); the runs for all k of one outer fold share that seed (both inducers) and, per inducer, "
           "a fitness cache.",
           "* C4.5 = our C4.5-like tree on the codes (multiway splits, gain ratio, min 2 rows, pessimistic "
           "pruning CF 0.25, Laplace leaves); Naive Bayes = Laplace-corrected NB on the codes.",
           "* Baselines: `raw` = the inducer on the original (undiscretised) features: Gaussian/Laplace naive "
           "Bayes, and for C4.5 scikit-learn's entropy tree (min 2 rows per leaf, unpruned) on numeric + one-hot "
           "features; `coded` = our inducer on all recoded features in one subset.",
           f"* `*`: the raw baseline is significantly more accurate (combined 5x2 CV F-test, Alpaydin 1999, "
           f"F > F(10, 5) 95% = {crit:.3f}, and the baseline's mean higher); `+`: the same against the coded "
           "baseline. `paper*` marks the paper's stars.",
           "* Missing values: " + ("kept; the recoding gives them the reserved last code, which the k-anonymity "
                                   "check counts as one more category (ours: the paper does not say how it "
                                   "treated missing values)." if missing == "value" else
                                   "imputed per outer fold (`--missing impute`): NaN in both halves -> the training "
                                   "half's mode (nominal) or median (numeric), before the baselines and the recoding."),
           "* Not available in ../shared/data, so left out: Credit, Wisconsin breast cancer (699 rows), Portfolio.",
           ""]
    out += ["## Wall time and machine load", "",
            "| data set | rows | features | classes | wall time (all folds, both inducers) | load avg before "
            "(1/5/15 min) | load after | 1-min load per fold (min-max) |", "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        lb, la = r["load_before"], r["load_after"]
        out.append(f"| {name} | {r['n']:,} | {r['d']} | {r['n_classes']} | {r['seconds'] / 60:.1f} min "
                   f"({r['seconds']:.0f} s) | {lb[0]:.2f} / {lb[1]:.2f} / {lb[2]:.2f} | "
                   f"{la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f} | {min(r['loads']):.2f}-{max(r['loads']):.2f} |")
    out.append("")
    deltas = []
    star_agree = star_ours_only = star_paper_only = 0
    plus_agree = plus_ours_only = plus_paper_only = 0
    for name, r in results.items():
        cells = r["cells"]
        ks = r["ks"]
        cols = ["raw", "coded", "1", *[str(k) for k in ks]]
        out += [f"## {name} ({r['n']:,} rows, {r['d']} features, quasi-identifier = top {r['n_qi']})", "",
                "| inducer | row | baseline raw | baseline coded | k=1 | " + " | ".join(f"k={k}" for k in ks) + " |",
                "|---|---|---|---|---|" + "---|" * len(ks)]
        for ind in INDUCERS:
            row = []
            for col in cols:
                cell = cells[(ind, col)]
                mark = ""
                if col not in ("raw", "coded"):
                    for base, sym in (("raw", "*"), ("coded", "+")):
                        b = cells[(ind, base)].acc
                        if np.mean(b) > np.mean(cell.acc) and f_test(b, cell.acc) > crit:
                            mark += sym
                    if col != "1":
                        ours = "*" in mark
                        paper = int(col) in PAPER_STARS.get((name, ind), set())
                        star_agree += ours == paper
                        star_ours_only += ours and not paper
                        star_paper_only += paper and not ours
                        plus = "+" in mark
                        plus_agree += plus == paper
                        plus_ours_only += plus and not paper
                        plus_paper_only += paper and not plus
                extra = f" ({cell.no_valid} no valid)" if cell.no_valid else ""
                row.append(f"{_fmt(cell.acc)}{mark}{extra}")
            out.append(f"| {INDUCER_NAMES[ind]} | ours | " + " | ".join(row) + " |")
            paper = PAPER.get((name, ind))
            if paper:
                stars = PAPER_STARS.get((name, ind), set())
                pc = [f"{paper[0]:.2f}", "", f"{paper[1]:.2f}"]
                pc += [f"{v:.2f}{'*' if k in stars else ''}" for v, k in zip(paper[2:], ks)]
                out.append(f"| {INDUCER_NAMES[ind]} | paper | " + " | ".join(pc) + " |")
                ours = [100 * np.mean(cells[(ind, c)].acc) for c in ["raw", "1", *[str(k) for k in ks]]]
                deltas += [(name, ind, col, o - p) for col, o, p in zip(["baseline", "1", *ks], ours, paper)]
        out.append("")
        out += ["Chosen partitions, mean over the folds: features kept / subsets / GA seconds per run / inner-CV "
                "fitness (%) of the chosen partition minus its test accuracy (points):", "",
                "| inducer | " + " | ".join(f"k={k}" for k in (1, *ks)) + " |", "|---|" + "---|" * (1 + len(ks))]
        for ind in INDUCERS:
            row = []
            for k in (1, *ks):
                c = cells[(ind, str(k))]
                if not c.kept:
                    row.append("none")
                    continue
                gap = 100 * (np.mean(c.fitness) - np.mean(c.valid_acc))
                row.append(f"{np.mean(c.kept):.1f} / {np.mean(c.subsets):.1f} / {np.mean(c.seconds):.1f} s / "
                           f"{gap:+.1f}")
            out.append(f"| {INDUCER_NAMES[ind]} | " + " | ".join(row) + " |")
        out += ["", "Quasi-identifiers valid on their own (smallest class of the single column >= k), mean over "
                "the folds: " + ", ".join(f"k={k}: {np.mean(cells[(INDUCERS[0], str(k))].qi_alone):.1f} of "
                                          f"{r['n_qi']}" for k in (1, *ks))
                + ". Quasi-identifiers whose smallest class is the "
                f"missing code: {np.mean(r['missing_smallest']):.1f} per fold.", ""]
    if deltas:
        d = np.array([x[3] for x in deltas])
        out += ["## Ours minus paper (percentage points, automatic summary)", "",
                f"* cells compared: {len(d)}; mean difference {d.mean():+.2f}, mean absolute {np.abs(d).mean():.2f}, "
                f"within 2 points: {(np.abs(d) <= 2).sum()}, more than 5 points off: {(np.abs(d) > 5).sum()}.",
                "* largest gaps: " + "; ".join(f"{n} {INDUCER_NAMES[i]} {c}: {v:+.2f}" for n, i, c, v in
                                              sorted(deltas, key=lambda x: -abs(x[3]))[:8]) + ".",
                f"* stars (raw baseline significantly better) on the k>1 cells: same as the paper in {star_agree}, "
                f"ours only {star_ours_only}, paper only {star_paper_only}; against the coded baseline (`+`): "
                f"same {plus_agree}, ours only {plus_ours_only}, paper only {plus_paper_only}.", ""]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--quick", action="store_true", help="1 repetition, population 20, 20 generations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inner-folds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS / "dmpd_table_1.md")
    parser.add_argument("--missing", choices=("value", "impute"), default="value",
                        help="value: missing is one more category (default); impute: training mode / median")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    reps = 1 if args.quick else 5
    ga = {"population": 20 if args.quick else 50, "generations": 20 if args.quick else 100, "p_crossover": 0.7,
          "p_mutation": 0.05, "inner_folds": args.inner_folds}
    if args.smoke:
        smoke.tiny_shared("adult/adult.csv", "adult/adult_test.csv")
        args.datasets, args.output, reps = ["Adult"], smoke.workdir() / "dmpd_table_1.md", 1
        ga.update(population=6, generations=2, inner_folds=2)
    results = {}
    for name in args.datasets:
        print(f"{name} ...", flush=True)
        results[name] = run_dataset(name, LOADERS[name](), reps, args.seed, ga, args.missing)
        print(f"{name}: {results[name]['seconds']:.0f} s", flush=True)
    note = ""
    if args.datasets != list(LOADERS):
        note += " --datasets " + " ".join(args.datasets)
    if args.quick:
        note += " --quick"
    if args.missing != "value":
        note += f" --missing {args.missing}"
    if args.output != RESULTS / "dmpd_table_1.md":
        note += f" --output {args.output}"
    text = render(results, ga, reps, args.seed, note, args.missing)
    if args.output.is_file():  # keep the hand-written discussion of an earlier run (it quotes that run's tables)
        old = args.output.read_text()
        if HAND_WRITTEN in old:
            text += "\n" + old[old.index(HAND_WRITTEN):]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
