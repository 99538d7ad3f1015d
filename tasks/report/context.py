"""What every section of the page reads: the release's manifest, its published table (and a partitioned release's
tables), the hashes of its files, and how the page may name its classes."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from ppdp.schemas.manifest import Manifest
from ppdp.tasks.report.wording import label_min_count


class Context:
    """A release as the page's sections read it: ``m`` its manifest, ``frame`` its published table (for a
    partitioned release, one of its tables: each holds every published row's class; for a distributed release, a
    bounded sample: the first row file's first rows, so a class label is named only when the sample alone holds
    it k times), ``parts`` a partitioned
    release's tables by name, ``files`` the SHA-256 of each file the report is built from, ``k_labels`` how often a
    class label must occur to be named (:func:`~ppdp.tasks.report.wording.label_min_count`), ``columns`` the
    release's column names, ``labels`` what the page calls each class of the utility report."""

    def __init__(self, manifest: Manifest, frame: pd.DataFrame, files: dict[str, str],
                 parts: dict[str, pd.DataFrame] | None = None) -> None:
        self.m = manifest
        self.parts = parts or {}
        # a partitioned release: every part holds every published row's class (class labels are counted on one)
        self.frame = next(iter(self.parts.values())) if self.parts else frame
        self.files = files
        self.k_labels = label_min_count(manifest)
        self.columns = set(manifest.columns) | {t.name for t in manifest.treatments}
        self.labels = self._class_labels()

    def _class_labels(self) -> dict[str, str]:
        """Each per-class label of the utility report -> what the report may call it: ``class #i`` (position
        among the sorted labels, as the tuning trace numbers classes), with the label itself only when it occurs
        at least k times in the published table."""
        cls = self.m.roles.class_column
        counts: Counter[str] = Counter()
        if cls is not None and cls in self.frame.columns:
            counts = Counter(self.frame[cls].dropna().astype(str).to_list())
        out = {}
        # the manifest lists classes in sorted label order, a label the published data holds too rarely already
        # replaced by its position (ppdp.tasks.utility.name_classes)
        for i, c in enumerate(self.m.utility.per_class if self.m.utility is not None else ()):  # None: withheld
            label = c.label
            out[label] = f"class #{i} ({label})" if counts.get(label, 0) >= self.k_labels else f"class #{i}"
        return out
