"""Reproduce Figure 4.7 of Peters (2011), SAP scenario S2, side by side with the paper; attacker figures too.

    .venv/bin/python -m benchmarks.sap_figure_4_7 [--datasets "Breast cancer,Heart"] [--repeats 5] [--folds 5]
        [--seed 0] [--no-figures] [--output PATH]

Setup, as in the paper (section 4.2-4.4, appendix A.2-A.3, Figure 4.7): SAP S2 (``ppdp.tasks.sanitize.sap``,
the class is the sensitive attribute) at p = 0, 0.1, 0.2, 0.3 on the training rows of 5 repeats x 5 stratified
folds; 1-NN with the overlap distance; per fold and class acc, pd, prec, pf, pooled over folds and classes;
quartiles and the Mann-Whitney U test against p = 0 (``benchmarks/sap_evaluation.py``). Two readings of the
pipeline: "appendix" (training rows grouped by class, so 1-NN ties go to the first class, as the printed code
hands them over; quartiles by the lower rule, which the paper's own figures imply) and "neutral" (random order,
linear quartiles). Heart is run with its 5 classes (the paper's Figure 4.1: Heart (Cleveland), 5 classes) and
with num binarized (num > 0; our reading, which the paper's Figure 4.7 Heart figures fit); mammography is the
961-row UCI file, not the paper's 150-row set. The random-query attacker (paper 002, section 4.2) is asked of
the whole data set and of its S2 releases, and of its S1 releases (prose and appendix readings) for comparison.
S1's utility (Figure 4.5, whose numbers the paper does not print) is measured too.

Writes ``benchmarks/results/sap_figure_4_7.md`` and one quartile chart per data set
(``sap_figure_4_7_<data set>.png``), or ``--output`` (the charts beside it).

``--smoke`` (``make bench-smoke``): Vote only, 300 of its rows (a generated stand-in where ../shared/data is
absent), one repeat of 2 folds; the tables and the chart go to a temporary folder.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import datasets, smoke
from benchmarks.paper_tables import dataset_runs, table_parser
from benchmarks.sap_evaluation import MEASURES, attack_summary, compare, cross_validate, quartiles, values
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.sanitize.sap import Sap

RESULTS = Path(__file__).resolve().parent / "results"
RATES = (0.0, 0.1, 0.2, 0.3)

# Figure 4.7: per data set and measure, (Q1, median, Q3) in % for sap0..sap3; the paper's Mann-Whitney marks are
# "00" for every rate but mammography's sap3 ("++")
PAPER = {
    "Breast cancer": {
        "acc": [(67, 74, 78), (67, 72, 77), (67, 71, 77), (65, 72, 75)],
        "pd": [(27, 53, 92), (24, 47, 91), (25, 47, 92), (23, 41, 90)],
        "prec": [(57, 67, 76), (50, 67, 76), (60, 69, 75), (55, 69, 76)],
        "pf": [(7, 17, 73), (8, 19, 75), (7, 19, 71), (10, 17, 73)],
    },
    "Heart": {
        "acc": [(72, 75, 78), (71, 77, 78), (71, 77, 79), (72, 75, 79)],
        "pd": [(62, 76, 87), (62, 78, 86), (62, 78, 88), (63, 76, 86)],
        "prec": [(71, 75, 83), (69, 75, 81), (70, 78, 83), (70, 76, 82)],
        "pf": [(12, 22, 38), (13, 22, 38), (11, 22, 38), (11, 24, 37)],
    },
    "Mammography": {
        "acc": [(58, 60, 62), (59, 61, 64), (59, 61, 64), (60, 63, 66)],
        "pd": [(17, 30, 96), (21, 34, 96), (21, 48, 95), (25, 41, 95)],
        "prec": [(58, 63, 82), (58, 63, 82), (59, 69, 81), (60, 66, 82)],
        "pf": [(4, 11, 81), (4, 10, 79), (5, 10, 78), (5, 12, 74)],
    },
    "Vote": {
        "acc": [(90, 92, 95), (90, 92, 95), (90, 92, 94), (91, 92, 95)],
        "pd": [(88, 92, 96), (88, 92, 95), (88, 93, 96), (88, 92, 96)],
        "prec": [(89, 93, 96), (89, 93, 96), (88, 93, 95), (89, 94, 96)],
        "pf": [(4, 8, 11), (4, 8, 11), (4, 7, 12), (3, 8, 11)],
    },
}
PAPER_ROWS = {"Breast cancer": 286, "Heart": 303, "Mammography": 150, "Vote": 435}


# -- data --------------------------------------------------------------------------------------------------------
def _read(rel: str) -> pd.DataFrame:
    path = datasets.SHARED / rel
    if not path.is_file():
        raise FileNotFoundError(f"{path} (the shared research data is not on this machine)")
    return pd.read_csv(path, na_values="?", keep_default_na=False)


def _roles(frame: pd.DataFrame, cls: str, numeric: set[str]) -> Roles:
    cols = [ColumnTag(name=c, role=Role.quasi_identifier,
                      kind=ColumnKind.numeric if c in numeric else ColumnKind.nominal, source="declared",
                      reason="paper 002: every attribute is a QID") for c in frame.columns if c != cls]
    cols.append(ColumnTag(name=cls, role=Role.class_, kind=ColumnKind.nominal, source="declared",
                          reason="paper 002: the class is the sensitive attribute"))
    return Roles(columns=cols)


def breast_cancer() -> tuple[pd.DataFrame, Roles, str]:
    frame = _read("breast_cancer_ljubljana/breast_cancer_ljubljana.csv").astype({"deg-malig": str})
    return frame, _roles(frame, "class", set()), "all 9 attributes nominal (as Weka's breast-cancer.arff)"


def heart(classes: int = 2) -> tuple[pd.DataFrame, Roles, str]:
    frame = _read("heart_cleveland/heart_cleveland.csv")
    numeric = {"age", "trestbps", "chol", "thalach", "oldpeak", "ca"}  # as Weka's heart-c.arff declares them
    if classes == 2:
        frame["num"] = np.where(frame["num"] > 0, ">50", "<50")
        note = ("class num binarized (num > 0): our reading, not the paper's (its Figure 4.1 lists Heart (Cleveland) "
                "with 5 classes, run below as Heart (5 classes)); taken because the paper's Figure 4.7 Heart "
                "figures fit it (compare the two runs' gaps)")
    else:
        frame["num"] = frame["num"].astype(str)
        note = "class num with its 5 values"
    return frame, _roles(frame, "num", numeric), note + "; age, trestbps, chol, thalach, oldpeak, ca numeric"


def mammography() -> tuple[pd.DataFrame, Roles, str]:
    frame = _read("mammographic_mass/mammographic_mass.csv")
    frame["severity"] = np.where(frame["severity"] == 1, "malignant", "benign")
    return (frame, _roles(frame, "severity", {"bi_rads", "age", "density"}),
            "UCI mammographic mass (961 rows, 2 classes), not the paper's 150-row, 3-class set; bi_rads, age, "
            "density numeric")


def vote() -> tuple[pd.DataFrame, Roles, str]:
    frame = _read("vote/vote.csv")
    return frame, _roles(frame, "class", set()), "16 nominal votes, '?' read as missing"


LOADERS = {
    "Breast cancer": breast_cancer,
    "Heart": heart,
    "Heart (5 classes)": lambda: heart(5),
    "Mammography": mammography,
    "Vote": vote,
}


# -- the run -----------------------------------------------------------------------------------------------------
# -- the run -----------------------------------------------------------------------------------------------------
# The two readings of the evaluation pipeline compared here (see the module docstring of sap_evaluation):
# "appendix": training rows grouped by class (1-NN ties to the first class), quartiles by the lower rule;
# "neutral": training rows in the repeat's random order, quartiles by linear interpolation.
PIPELINES = {"appendix": ("by_class", "lower"), "neutral": ("shuffled", "linear")}


def run_dataset(name: str, repeats: int, folds: int, seed: int) -> dict:
    frame, roles, note = LOADERS[name]()
    cls = roles.class_column
    qis = [c for c in roles.quasi_identifiers if c != cls]
    started = time.perf_counter()
    s2 = {p: cross_validate(frame, roles, lambda rate, s: Sap(scenario="S2", rate=rate, seed=s), RATES,
                            repeats=repeats, folds=folds, seed=seed, order=order)
          for p, (order, _) in PIPELINES.items()}
    s1 = {v: cross_validate(frame, roles, lambda rate, s, v=v: Sap(scenario="S1", rate=rate, variant=v, seed=s),
                            RATES[1:], repeats=repeats, folds=folds, seed=seed, order="by_class")
          for v in ("prose", "appendix")}
    utility_seconds = time.perf_counter() - started
    started = time.perf_counter()
    releases = {}
    for rate in RATES[1:]:
        releases[f"S2 p={rate:g}"] = Sap(scenario="S2", rate=rate, seed=seed).sanitize(frame, roles)
    for v in ("prose", "appendix"):
        for rate in RATES[1:]:
            releases[f"S1 {v} p={rate:g}"] = Sap(scenario="S1", rate=rate, variant=v, seed=seed).sanitize(frame, roles)
    attack = attack_summary(frame, {k: r.frame for k, r in releases.items()}, qis, cls, seed=seed)
    attack["original"]["k"] = float(np.bincount(equivalence_class_ids(frame, qis)).min())
    for k, r in releases.items():
        attack[k]["suppressed"] = float(sum(r.suppressed_cells.values()))
        attack[k]["k"] = float(np.bincount(r.group).min())
    attack_seconds = time.perf_counter() - started
    classes = [str(c) for c in sorted(frame[cls].astype(str).unique())]
    return dict(name=name, frame=frame, note=note, s2=s2, s1=s1, attack=attack, classes=classes,
                counts=frame[cls].astype(str).value_counts().sort_index().to_dict(),
                utility_seconds=utility_seconds, attack_seconds=attack_seconds)


def paper_of(name: str) -> dict | None:
    """The paper's figures for a data set ("Heart (5 classes)" is compared with the paper's Heart)."""
    return PAPER.get(name.replace(" (5 classes)", ""))


def medians(table: pd.DataFrame, aggregation: str, method: str) -> dict[str, list[float]]:
    return {m: [quartiles(values(table, rate, m, aggregation), method)[1] for rate in RATES] for m in MEASURES}


def median_gap(r: dict, pipeline: str, aggregation: str, method: str) -> float | None:
    """Mean |our median - paper's median| (percentage points) over the 4 measures x 4 rates."""
    paper = paper_of(r["name"])
    if paper is None:
        return None
    ours = medians(r["s2"][pipeline], aggregation, method)
    return float(np.mean([abs(100 * ours[m][i] - paper[m][i][1]) for m in MEASURES for i in range(len(RATES))]))


def pct(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{100 * x:.0f}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < 0.01 else f"p = {p:.2f}"


def _mark(c) -> str:
    return "" if c.rate == 0 or c.verdict == "same" else f" ({c.verdict}, {_p(c.p_value)})"


def dataset_markdown(r: dict) -> list[str]:
    name, paper = r["name"], paper_of(r["name"])
    counts = ", ".join(f"{c}: {n}" for c, n in r["counts"].items())
    lines = [f"## {name}", "",
             f"Our data: {len(r['frame'])} rows ({counts}); {r['note']}. "
             + (f"Paper: {PAPER_ROWS[name]} rows." if name in PAPER_ROWS else
                "Paper: Heart (Cleveland), 303 rows, 5 classes in its Figure 4.1, the class coding of this run; its "
                "Figure 4.7 does not say which coding its Heart panel used, so that panel is compared with both "
                "Heart runs."), ""]
    per_class = [f"class:{c}" for c in r["classes"]]
    lines += ["| measure | p | paper Q1 / median / Q3 | ours, appendix pipeline: Q1 / median / Q3 | Mann-Whitney vs "
              "p = 0 | ours, neutral pipeline: Q1 / median / Q3 | Mann-Whitney vs p = 0 | mean over classes | "
              + " | ".join(per_class) + " |",
              "|---|---|---|---|---|---|---|---|" + "---|" * len(per_class)]
    app = {(c.measure, c.rate): c for c in compare(r["s2"]["appendix"], RATES, method="lower")}
    neu = {(c.measure, c.rate): c for c in compare(r["s2"]["neutral"], RATES)}
    other = {a: medians(r["s2"]["appendix"], a, "linear") for a in ["mean", *per_class]}
    for m in MEASURES:
        for i, rate in enumerate(RATES):
            a, n = app[(m, rate)], neu[(m, rate)]
            lines.append(
                f"| {m} | {rate:g} | " + (" / ".join(str(v) for v in paper[m][i]) if paper else "-")
                + f" | {pct(a.q1)} / {pct(a.median)} / {pct(a.q3)} | {'(baseline)' if rate == 0 else a.verdict}"
                + ("" if rate == 0 else f" ({_p(a.p_value)})")
                + f" | {pct(n.q1)} / {pct(n.median)} / {pct(n.q3)} | {'(baseline)' if rate == 0 else n.verdict}"
                + ("" if rate == 0 else f" ({_p(n.p_value)})")
                + " | " + " | ".join(pct(other[g][m][i]) for g in other) + " |")
    train = r["s2"]["appendix"].groupby("rate")["train_rows"].mean()
    lines += ["", "Training rows in the 1-NN model (mean per fold; S2 leaves out the rows whose class it suppressed): "
              + ", ".join(f"p = {rate:g}: {train[rate]:.1f}" for rate in RATES) + ".", ""]
    if paper:
        gaps = {
            "appendix pipeline (pooled, lower)": median_gap(r, "appendix", "pooled", "lower"),
            "by-class ties, pooled, linear": median_gap(r, "appendix", "pooled", "linear"),
            "shuffled ties, pooled, lower": median_gap(r, "neutral", "pooled", "lower"),
            "neutral pipeline (pooled, linear)": median_gap(r, "neutral", "pooled", "linear"),
            "by-class ties, mean over classes": median_gap(r, "appendix", "mean", "linear"),
            **{f"by-class ties, {c}": median_gap(r, "appendix", c, "linear") for c in per_class},
        }
        best = min(gaps, key=gaps.get)
        lines += ["Mean |our median - paper's median| over the 16 cells (percentage points): "
                  + "; ".join(f"{k} {g:.1f}" for k, g in gaps.items()) + f". Closest: **{best}** (a reading "
                  "picked by comparing with the paper's numbers, so its agreement is optimistic; the neutral "
                  "pipeline is the one whose settings were not chosen from them).", ""]
    return lines


def evidence_markdown() -> list[str]:
    """What the paper's own figures say about its quartile rule (computed from PAPER, binary data sets)."""
    lines = ["### Which aggregation and quartile rule the paper's single numbers are", "",
             "`knn.clj` concatenates `abcd-stats` (one row per class) over the 25 folds and takes the quartiles of "
             "the 50 values (2 classes) together: **pooled**. With two classes the pooled pf values are exactly "
             "100 minus the pooled pd values (a class's pf is 100 minus the other class's pd), so with linear "
             "interpolation median(pd) + median(pf) would be exactly 100, and Q1(pf) = 100 - Q3(pd), "
             "Q3(pf) = 100 - Q1(pd). The paper's figures (binary data sets):", "",
             "| data set | p | median pd + median pf | 100 - Q3(pd) vs Q1(pf) | 100 - Q1(pd) vs Q3(pf) |",
             "|---|---|---|---|---|"]
    for name in ("Breast cancer", "Heart", "Vote"):
        p = PAPER[name]
        for i, rate in enumerate(RATES):
            lines.append(f"| {name} | {rate:g} | {p['pd'][i][1] + p['pf'][i][1]} | {100 - p['pd'][i][2]} vs "
                         f"{p['pf'][i][0]} | {100 - p['pd'][i][0]} vs {p['pf'][i][2]} |")
    lines += ["", "The quartiles mirror each other as pooling implies, but the medians add up to 100 or less (70 for "
              "breast cancer at p = 0), never more: the median is the lower of the two middle values (the 25th of "
              "50, `numpy.percentile(method=\"lower\")`), not their mean. With bimodal pooled values (breast cancer: "
              "the recurrence class's pd is low, the other's high) that is the largest value of the low cluster, "
              "hence the paper's pd median of 53 beside a pf median of 17. Our 'appendix pipeline' columns use that "
              "rule; the 'neutral' ones use linear interpolation.", ""]
    return lines


def findings_markdown(rows: list[dict]) -> list[str]:
    """The run in a few lines, every figure computed here."""
    lines = ["## Summary of this run", ""]
    for r in rows:
        paper = paper_of(r["name"])
        app = compare(r["s2"]["appendix"], RATES, method="lower")
        same = sum(c.verdict == "same" for c in app if c.rate != 0)
        text = f"* **{r['name']}**: "
        if paper:
            text += (f"our medians are on average {median_gap(r, 'neutral', 'pooled', 'linear'):.1f} percentage "
                     "points from the paper's with the neutral pipeline (none of its settings chosen from the paper's "
                     "numbers); "
                     f"{median_gap(r, 'appendix', 'pooled', 'lower'):.1f} with the appendix pipeline, a reading of "
                     "ours chosen after seeing the paper's numbers (its lower quartile rule is inferred from them), "
                     "so that agreement is optimistic; ")
        text += (f"Mann-Whitney (appendix pipeline) finds no difference from p = 0 in {same} of "
                 f"{len(app) - len(MEASURES)} S2 cells")
        a = r["attack"]
        text += (f"; the attacker's mean association falls from {a['original']['assoc_mean']:.2f} (original) to "
                 f"{a['S2 p=0.3']['assoc_mean']:.2f} at S2 p = 0.3, re-identification unchanged (mean "
                 f"{a['original']['reid_mean']:.2f}); S1 p = 0.3 brings the mean re-identification to "
                 f"{a['S1 prose p=0.3']['reid_mean']:.2f} (prose) / {a['S1 appendix p=0.3']['reid_mean']:.2f} "
                 "(appendix).")
        lines.append(text)
    lines += ["", "The paper marks every S2 cell as no different from p = 0 except mammography's accuracy at p = 0.3 "
              "(its 150-row set; ours is the 961-row UCI file). Each data set's section below lists the gap of "
              "every reading tried (aggregation, quartile rule, tie order: seven for a two-class set) and names "
              "the closest; that closest reading is picked after seeing the paper's numbers (for breast cancer it "
              "is the appendix pipeline), so its agreement is optimistic too. Heart's binarized class (num > 0) is "
              "likewise our reading, chosen because the paper's Heart figures fit it; the paper's Figure 4.1 lists "
              "Heart (Cleveland) with 5 classes (the Heart (5 classes) run).", ""]
    return lines


def attack_markdown(r: dict) -> list[str]:
    a = r["attack"]
    lines = [f"### {r['name']}: the random-query attacker", "",
             f"{int(a['original']['queries'])} distinct queries drawn from the original, asked of each table.", "",
             "| table | cells suppressed | k | queries matching | matching exactly one | re-id Q1 / median / Q3 "
             "| re-id mean | association Q1 / median / Q3 | association mean |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, row in a.items():
        sup = "0" if label == "original" else f"{int(row['suppressed'])}"
        lines.append(
            f"| {label} | {sup} | {int(row['k'])} | {int(row['matched'])} | {100 * row['identifying']:.1f}% "
            f"| {row['reid_q1']:.2f} / {row['reid_median']:.2f} / {row['reid_q3']:.2f} | {row['reid_mean']:.3f} "
            f"| {row['assoc_q1']:.2f} / {row['assoc_median']:.2f} / {row['assoc_q3']:.2f} | {row['assoc_mean']:.3f} |")
    return lines + [""]


def s1_markdown(rows: list[dict]) -> list[str]:
    lines = ["## S1 (Figure 4.5, whose numbers the paper does not print): utility of the two readings", "",
             "Appendix pipeline (by-class ties, pooled, lower median), %; the S2 run's p = 0 (the same folds) is "
             "the baseline; in brackets the Mann-Whitney verdict against it when not 'same'.", "",
             "| data set | reading | p | acc | pd | prec | pf | QI cells suppressed per fold |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        base = r["s2"]["appendix"][np.isclose(r["s2"]["appendix"]["rate"], 0.0)]
        for v, table in r["s1"].items():
            cmp = {(c.measure, c.rate): c for c in compare(pd.concat([base, table], ignore_index=True), RATES,
                                                            method="lower")}
            sup = table.groupby("rate")["suppressed"].mean()
            for rate in RATES[1:]:
                cells = " | ".join(pct(cmp[(m, rate)].median) + _mark(cmp[(m, rate)]) for m in MEASURES)
                lines.append(f"| {r['name']} | {v} | {rate:g} | {cells} | {sup[rate]:.0f} |")
    return lines + [""]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def plot(r: dict, directory: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paper = paper_of(r["name"])
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.5), dpi=100, sharey=True)
    series = [("appendix", "lower", "k", "o", "ppdp, appendix pipeline", 0.0),
              ("neutral", "linear", "tab:blue", "^", "ppdp, neutral pipeline", 0.2)]
    for ax, m in zip(axes, MEASURES):
        for i, rate in enumerate(RATES):
            for pipeline, method, color, marker, label, dy in series:
                q1, med, q3 = (100 * v for v in quartiles(values(r["s2"][pipeline], rate, m), method))
                ax.plot([q1, q3], [i + dy, i + dy], "-", color=color, lw=2)
                ax.plot([med], [i + dy], marker, color=color, label=label if i == 0 else None)
            if paper:
                p1, pm, p3 = paper[m][i]
                ax.plot([p1, p3], [i - 0.2, i - 0.2], "-", color="tab:red", lw=2)
                ax.plot([pm], [i - 0.2], "s", color="tab:red", label="paper" if i == 0 else None)
        ax.set_xlim(0, 100)
        ax.axvline(50, color="0.8", lw=0.8)
        ax.set_title(m)
        ax.set_yticks(range(len(RATES)), [f"sap{i} (p={rate:g})" for i, rate in enumerate(RATES)])
    axes[0].invert_yaxis()  # shared: sap0 on top
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"SAP S2, 1-NN: {r['name']} (Q1 - median - Q3, %)", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    out = directory / f"sap_figure_4_7_{_slug(r['name'])}.png"
    fig.savefig(out)
    plt.close(fig)
    return out.name


def markdown(rows: list[dict], repeats: int, folds: int, seed: int, figures: list[str], seconds: float) -> str:
    lines = [
        "# SAP, Figure 4.7 (scenario S2): paper vs ppdp",
        "",
        f"Generated by `benchmarks/sap_figure_4_7.py` (seed {seed}, {repeats} repeats x {folds} stratified folds, "
        f"whole run {seconds:.0f} s on this machine). SAP S2 (`ppdp.tasks.sanitize.sap`, `scenario=\"S2\"`) "
        "suppresses the class of ceil(p x |class|) random training rows per class (the appendix's `sap-S2`); "
        "the 1-NN model (overlap distance: nominal 0/1, numeric |a - b| / range over the training rows, capped "
        "at 1, a missing or suppressed value matches nothing) leaves those rows out, as `knn.clj` does; test "
        "rows are never sanitized. Per fold and class: acc = (TN + TP) / all, pd = TP / (TP + FN), "
        "prec = TP / (TP + FP), pf = FP / (FP + TN). Figures in %. Mann-Whitney U: two-sided, 95%, each rate's "
        "pooled values against p = 0's ('same': no significant difference; the paper marks every S2 cell '00', "
        "i.e. no difference, except mammography's accuracy at p = 0.3, marked '++').",
        "",
        "Two readings of the evaluation pipeline, both ours. **Neutral**: training rows in random order, linear "
        "quartiles; no part of it was fitted to the paper's numbers. **Appendix**: the training rows reach 1-NN "
        "grouped by class, as the printed code hands them over (`sap-S2` rebuilds the table class by class from "
        "`mygroup`; classes in sort order assumed), so 1-NN's ties (frequent with nominal attributes) go to the "
        "first class, and quartiles by the lower rule, which the paper does not state: we inferred it from the "
        "paper's own numbers (next section), so this reading was chosen after seeing them and its agreement "
        "with them is optimistic. Both pool every (fold, class) value.",
        "",
    ]
    lines += findings_markdown(rows)
    lines += evidence_markdown()
    for r in rows:
        lines += dataset_markdown(r)
    lines += ["# The attacker before and after (whole data sets)", "",
              "Paper 002's random-query attacker (`ppdp.tasks.privacy.risk.query_attack`): queries drawn from the "
              "original (stop after 100 draws without a new query, at most 2000), asked of the original and of "
              "each release (SAP run once on the whole data set, seed 0). Re-identification (S1) = 1 / records "
              "matching (0 when none matches); association (S2) = the largest share of one class value among the "
              "records matching (a suppressed class counts in the denominator, never as a value). k = smallest "
              "equivalence class over all attributes (a suppressed or missing cell is a value of its own). S2 "
              "leaves the quasi-identifiers as they are, so its re-identification figures equal the original's; "
              "only the association moves. The S1 rows (prose: rule-matching values; appendix: random positions) "
              "are there for comparison: S1 is the scenario aimed at re-identification.", ""]
    for r in rows:
        lines += attack_markdown(r)
    lines += s1_markdown(rows)
    if figures:
        lines += ["Charts (paper red, ppdp appendix pipeline black, neutral pipeline blue; Q1 to Q3 with the median "
                  "marked): " + ", ".join(f"`{f}`" for f in figures) + ".", ""]
    lines += ["Timing (seconds): " + "; ".join(
        f"{r['name']} utility {r['utility_seconds']:.1f}, attacker {r['attack_seconds']:.1f}" for r in rows) + ".",
              ""]
    return "\n".join(lines)


def main() -> None:
    parser = table_parser(__doc__.splitlines()[0], LOADERS, RESULTS / "sap_figure_4_7.md", repeats=5)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    if args.smoke:
        smoke.tiny_shared("vote/vote.csv")
        args.datasets, args.repeats, args.folds = "Vote", 1, 2
        args.output = smoke.workdir() / "sap_figure_4_7.md"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows, figures = [], []
    for name, r in dataset_runs(args.datasets, lambda n: run_dataset(n, args.repeats, args.folds, args.seed)):
        rows.append(r)
        paper = paper_of(name)
        ours = medians(r["s2"]["appendix"], "pooled", "lower")
        for m in MEASURES:
            print(f"{name:<18} {m:<4} paper " + ("/".join(str(paper[m][i][1]) for i in range(4)) if paper else "-")
                  + "  ours (appendix pipeline) " + "/".join(pct(v) for v in ours[m]), flush=True)
        if not args.no_figures:
            figures.append(plot(r, args.output.parent))
    text = markdown(rows, args.repeats, args.folds, args.seed, figures, time.perf_counter() - started)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
