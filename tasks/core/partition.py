"""Balanced k-d partitions: split rows into cells of (almost) equal size without a loop over rows."""

from __future__ import annotations

import numpy as np


def balanced_partition(x: np.ndarray, n_parts: int) -> np.ndarray:
    """Split the rows into ``n_parts`` cells of (almost) equal size by recursive splits at the weighted median
    of the widest dimension (a k-d tree with one leaf per cluster); returns the cell of each row.

    Used to start k-means: cells are compact and hold floor(n/p) or ceil(n/p) rows each. The loop runs once per
    cell (about 2p times), never per row.
    """
    n = len(x)
    labels = np.empty(n, dtype=np.int64)
    stack = [(np.arange(n), n_parts, 0)]
    while stack:
        idx, parts, base = stack.pop()
        if parts <= 1 or len(idx) <= 1:
            labels[idx] = base
            continue
        left = parts // 2
        pts = x[idx]
        dim = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
        cut = min(max(int(round(len(idx) * left / parts)), 1), len(idx) - 1)
        order = np.argpartition(pts[:, dim], cut - 1)
        stack.append((idx[order[:cut]], left, base))
        stack.append((idx[order[cut:]], parts - left, base + left))
    return labels
