"""Figures that go beside a release (matplotlib, headless)."""

from __future__ import annotations

import io

from ppdp.schemas.reports import TuningTrace


def tuning_plot_png(trace: TuningTrace) -> bytes | None:
    """Accuracy and privacy against group size for every evaluated size; None when nothing was evaluated."""
    if not trace.evaluations:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evs = sorted(trace.evaluations, key=lambda e: e.k)
    ks = [e.k for e in evs]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(ks, [e.accuracy for e in evs], "o-", color="tab:blue", label="accuracy (held-out)")
    ax.set_xlabel(f"group size {trace.parameter}")
    ax.set_ylabel("accuracy", color="tab:blue")
    ax.axvline(trace.chosen, color="grey", linestyle="--", label=f"chosen {trace.parameter}={trace.chosen}")
    handles, labels = ax.get_legend_handles_labels()
    if any(e.privacy is not None for e in evs):
        ax2 = ax.twinx()
        pts = [(e.k, e.privacy) for e in evs if e.privacy is not None]
        ax2.plot([p[0] for p in pts], [p[1] for p in pts], "s--", color="tab:red", label="privacy (CI width)")
        ax2.set_ylabel("confidence-interval privacy", color="tab:red")
        more_h, more_l = ax2.get_legend_handles_labels()
        handles, labels = handles + more_h, labels + more_l
    ax.set_title(f"tuning: {trace.strategy}")
    ax.legend(handles, labels, loc="lower left", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
