"""Figures that go beside a release (matplotlib, headless)."""

from __future__ import annotations

import io

from ppdp.schemas.reports import FeaturePartition, TuningTrace


def tuning_plot_png(trace: TuningTrace) -> bytes | None:
    """Accuracy and the privacy figure against the tuned parameter for every evaluated value, with the policy
    threshold, the accuracy-gap band and the choice marked; None when nothing was evaluated."""
    if not trace.evaluations:
        return None
    import matplotlib  # heavy: Matplotlib, loaded when a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: Matplotlib, loaded when a plot is drawn

    evs = sorted(trace.evaluations, key=lambda e: e.value)
    xs = [e.value for e in evs]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(xs, [e.accuracy for e in evs], "o-", color="tab:blue", label="accuracy (held-out)")
    failing = [e for e in evs if e.meets_policy is False]
    if failing:
        ax.plot([e.value for e in failing], [e.accuracy for e in failing], "x", color="black", markersize=9,
                label="fails a privacy gate")
    if trace.accuracy_gap is not None and trace.objective == "most_privacy_within_gap":
        gap = trace.accuracy_gap
        if trace.strategy == "bisect":  # Figure 6 compares with the least private value's accuracy
            least = evs[0] if trace.safer != "smaller" else evs[-1]
            lo, hi = least.accuracy * (1 - gap), least.accuracy * (1 + gap)
        else:  # grid: within gap of the best accuracy
            hi = max(e.accuracy for e in evs)
            lo = hi * (1 - gap)
        ax.axhspan(lo, hi, color="tab:blue", alpha=0.12, label=f"accuracy gap t_a={gap:g}")
    ax.set_xlabel(f"{trace.parameter} ({trace.safer} is safer)" if trace.safer else str(trace.parameter))
    ax.set_ylabel("accuracy", color="tab:blue")
    if trace.threshold is not None:
        ax.axvline(trace.threshold, color="tab:red", linestyle=":", label=f"policy threshold {trace.threshold:g}")
    if trace.chosen is not None:
        ax.axvline(trace.chosen, color="grey", linestyle="--", label=f"chosen {trace.parameter}={trace.chosen:g}")
    if len(xs) > 1 and min(xs) > 0 and max(xs) / min(xs) > 50:
        ax.set_xscale("log")
    handles, labels = ax.get_legend_handles_labels()
    if any(e.privacy is not None for e in evs):
        ax2 = ax.twinx()
        pts = [(e.value, e.privacy) for e in evs if e.privacy is not None]
        ax2.plot([p[0] for p in pts], [p[1] for p in pts], "s--", color="tab:red", label="privacy figure")
        ax2.set_ylabel("privacy figure", color="tab:red")
        more_h, more_l = ax2.get_legend_handles_labels()
        handles, labels = handles + more_h, labels + more_l
    ax.set_title(f"tuning: {trace.strategy}, {trace.objective}" + (f", choice {trace.choice}" if trace.choice else ""))
    ax.legend(handles, labels, loc="lower left", fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def pareto_plot_png(partition: FeaturePartition | None, k: int | None = None) -> bytes | None:
    """A partitioned release's trade-off (paper 001, Fig. 9): inner cross-validated accuracy against the anonymity
    level reached, for the non-dominated partitions the search evaluated, with the release's k marked; None
    without a front."""
    if partition is None or not partition.pareto:
        return None
    import matplotlib  # heavy: Matplotlib, loaded when a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: Matplotlib, loaded when a plot is drawn

    pts = sorted((p.k, p.accuracy) for p in partition.pareto)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.step([p[0] for p in pts], [p[1] for p in pts], "o-", where="post", color="tab:blue",
            label="Pareto front (non-dominated partitions)")
    if k is not None:
        ax.axvline(k, color="tab:red", linestyle=":", label=f"release k={k}")
    if len(pts) > 1 and pts[0][0] > 0 and pts[-1][0] / pts[0][0] > 50:
        ax.set_xscale("log")
    ax.set_xlabel("anonymity level reached (smallest class over every subset's quasi-identifiers)")
    ax.set_ylabel("inner CV accuracy")
    ax.set_title(f"DMPD: accuracy against k ({partition.evaluations} partitions evaluated)")
    ax.legend(loc="lower left", fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
