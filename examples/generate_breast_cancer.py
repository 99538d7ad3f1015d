"""Write the Wisconsin diagnostic breast cancer table that scikit-learn ships (offline) as a CSV for the numeric
demos (examples/svd_demo.yaml).

    python examples/generate_breast_cancer.py [--out examples/data/breast_cancer.csv]

Columns: the 30 measurements of the cell nuclei (snake_case names, as scikit-learn names them with spaces
replaced), then ``diagnosis`` (malignant or benign). 569 rows. Source: UCI Machine Learning Repository, Breast
Cancer Wisconsin (Diagnostic), W. Wolberg, W. Street and O. Mangasarian (1995), CC BY 4.0; read through
``sklearn.datasets.load_breast_cancer`` (no download).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def table():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.data.copy()
    frame.columns = [c.replace(" ", "_") for c in frame.columns]
    frame["diagnosis"] = data.target.map(dict(enumerate(data.target_names))).astype(str)
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data" / "breast_cancer.csv")
    args = parser.parse_args()
    table().to_csv(args.out, index=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
