"""Privacy validation as a release step, and of any CSV or Parquet table outside a release (``ppdp validate``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.reports import PrivacyReport
from ppdp.schemas.source import SourceSpec
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.io import read_header, read_table
from ppdp.tasks.ingest import NUMERIC_INTENT, numeric_intent
from ppdp.tasks.privacy.measure import check_gates, measure_table, read_hierarchy

PYCANON_NAMES = (
    "k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity", "recursive_c_l_diversity",
    "t_closeness", "delta_disclosure", "basic_beta_likeness", "enhanced_beta_likeness",
)


def load_hierarchies(paths: dict[str, Path]) -> dict[str, pd.DataFrame]:
    out = {}
    for column, path in paths.items():
        try:
            out[column] = read_hierarchy(path)
        except (OSError, ValueError, pd.errors.ParserError):
            raise SpecError(f"spec privacy.hierarchies.{column}: cannot read hierarchy {path}") from None
    return out


def read_table_file(path: Path, sep: str = ",", na_values: list[str] | None = None) -> pd.DataFrame:
    """A CSV or Parquet table (format from the suffix), read as the ingest step reads its input."""
    return read_table(_source(path, sep, na_values))


def _source(path: Path, sep: str, na_values: list[str] | None) -> SourceSpec:
    path = Path(path)
    fmt = "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"
    source = SourceSpec(path=path, format=fmt, sep=sep, na_values=list(na_values or []))
    read_header(source)
    return source


# -- checks ---------------------------------------------------------------------------------------------------
@dataclass
class Coded:
    """One column as codes: ``codes`` (int, one per row; a missing value is a code of its own), ``uniques``
    (the value of each code, missing included), and how the column was typed (for the checks)."""

    codes: np.ndarray
    uniques: pd.Index
    numeric: bool  # numbers or booleans: never "numbers with stray text"
    object_series: pd.Series | None = None  # an object-dtype column, checked row by row for mixed types
    all_used: bool = True  # every code occurs (pd.factorize); False: a dictionary may hold unused values

    @classmethod
    def of(cls, series: pd.Series) -> Coded:
        codes, uniques = pd.factorize(series, use_na_sentinel=False)
        numeric = pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
        return cls(codes, pd.Index(uniques), numeric, series if series.dtype == object else None)

    def counts(self) -> np.ndarray:
        return np.bincount(self.codes, minlength=len(self.uniques))


def check_names(columns: list[str], qi: list[str], sa: list[str], where: str) -> None:
    if not qi:
        raise InputError(f"{where}: give at least one quasi-identifier (--qi)")
    for name in [*qi, *sa]:
        if name not in columns:
            raise InputError(f"{where}: column '{name}' is not in the table")
    for name in sa:
        if name in qi:
            raise InputError(f"{where}: column '{name}' is both a quasi-identifier and a sensitive attribute")
    if len(set(qi)) != len(qi) or len(set(sa)) != len(sa):
        raise InputError(f"{where}: a column is listed twice")


def check_column(name: str, column: Coded, is_qi: bool, where: str) -> None:
    """All-missing quasi-identifier, mixed value types, numbers with stray text: from the distinct values
    (weighted by their counts where a share is needed), never row by row, except for object-dtype columns
    (rare: pyarrow reads text as ``str``), whose value types are checked per row."""
    present = np.asarray(column.uniques.notna())
    counts = None if column.all_used else column.counts()
    if is_qi and not (present.any() if counts is None else counts[present].any()):
        raise InputError(f"{where}: quasi-identifier '{name}' is entirely missing")
    if column.object_series is not None:  # factorize merges 1, 1.0 and True: check the rows themselves
        kinds = {t.__name__ for t in set(map(type, column.object_series.dropna().to_numpy()))}
        if len(kinds) > 1:
            raise InputError(f"{where}: column '{name}' mixes value types ({', '.join(sorted(kinds))})")
        mixed = numeric_intent(column.object_series)
    elif column.numeric or not present.any():
        mixed = False
    else:  # ppdp.tasks.ingest.numeric_intent over the distinct values, weighted by their counts
        parsed = np.asarray(pd.notna(pd.to_numeric(pd.Index(column.uniques[present].astype(str)),
                                                   errors="coerce")))
        mixed = False
        if parsed.any():  # else the share is 0: no need to count
            counts = column.counts() if counts is None else counts
            total = counts[present].sum()
            share = float(counts[present][parsed].sum() / total) if total else 0.0
            mixed = total > 0 and NUMERIC_INTENT <= share < 1.0
    if mixed:
        raise InputError(f"{where}: column '{name}' mixes numbers and text (declare missing-value markers "
                         "with --na-values)")


def check_table_columns(frame: pd.DataFrame, qi: list[str], sa: list[str], where: str) -> dict[str, Coded]:
    """One-line errors for unusable input: unknown column, SA equal to a QI, empty table, all-null QI,
    mixed types, numbers with stray text.

    Returns each checked column factorized (``pd.factorize(..., use_na_sentinel=False)``) so that callers need
    not factorize a large table again.
    """
    check_names(list(frame.columns), qi, sa, where)
    if len(frame) == 0:
        raise InputError(f"{where}: the table has no rows")
    coded = {}
    for name in [*qi, *sa]:
        coded[name] = Coded.of(frame[name])
        check_column(name, coded[name], name in qi, where)
    return coded


# -- reading a Parquet table for validation -------------------------------------------------------------------
def _read_parquet_coded(source: SourceSpec, qi: list[str], sa: list[str], where: str
                        ) -> tuple[pd.DataFrame, dict[str, Coded]]:
    """Only the ``qi`` and ``sa`` columns of a Parquet file; text quasi-identifiers decoded straight to codes.

    Values, types and missing-value markers are those :func:`ppdp.tasks.core.io.read_table` gives (``na_values``
    apply to text columns); but a text quasi-identifier is read dictionary-encoded (pyarrow decodes the file's
    dictionary pages without building a Python string per row) and kept as codes: the measures only compare
    quasi-identifiers for equality. Returns the sensitive attributes and the non-text quasi-identifiers as a
    frame, and every checked column coded.
    """
    path = source.path
    schema = pq.read_schema(path)  # readable: read_header has checked it
    by_name = {str(n).strip(): n for n in schema.names}
    check_names(list(by_name), qi, sa, where)
    text = {name for name in qi if pa.types.is_string(schema.field(by_name[name]).type)
            or pa.types.is_large_string(schema.field(by_name[name]).type)}
    try:
        table = pq.read_table(path, columns=[by_name[n] for n in [*qi, *sa]],
                              read_dictionary=[by_name[n] for n in text])
    except (pa.ArrowException, OSError):
        raise InputError(f"input {path}: not a readable Parquet file") from None
    if table.num_rows == 0:
        raise InputError(f"{where}: the table has no rows")
    na_values = list(source.na_values)
    others = [name for name in [*qi, *sa] if name not in text]
    # keeps the file's pandas metadata (dtypes); split blocks: no copy into one 2-D block per dtype
    plain = table.select([by_name[n] for n in others]).to_pandas(split_blocks=True)
    plain.columns = others
    coded: dict[str, Coded] = {}
    for name in [*qi, *sa]:
        if name in text:
            coded[name] = _dictionary_codes(table.column(by_name[name]), na_values)
        else:
            series = plain[name]
            if na_values and (series.dtype == object or pd.api.types.is_string_dtype(series)):
                series = plain[name] = series.mask(series.isin(na_values))
            coded[name] = Coded.of(series)
        check_column(name, coded[name], name in qi, where)
    del table
    columns = {name: coded[name].codes if name in qi else plain[name] for name in [*qi, *sa]}
    return pd.DataFrame(columns, index=pd.RangeIndex(len(coded[qi[0]].codes)), copy=False), coded


def _dictionary_codes(column: pa.ChunkedArray, na_values: list[str]) -> Coded:
    """Codes of a dictionary-encoded text column: the dictionary's positions, missing values (and the
    ``na_values`` markers) one more code."""
    column = column.unify_dictionaries()
    if column.num_chunks:
        dictionary = column.chunk(0).dictionary
        indices = pa.chunked_array([chunk.indices for chunk in column.chunks]).combine_chunks()
    else:
        dictionary, indices = pa.array([], pa.string()), pa.array([], pa.int32())
    values = pd.Index(dictionary.to_pandas(), dtype=object)
    missing = len(values)
    codes = pc.fill_null(indices, missing).to_numpy(zero_copy_only=False)
    markers = np.flatnonzero(np.asarray(values.isin(na_values))) if na_values else np.zeros(0, dtype=np.int64)
    if markers.size:  # a marker is a missing value, as ingest's mask makes it
        remap = np.arange(missing + 1, dtype=codes.dtype)
        remap[markers] = missing
        codes = remap[codes]
    uniques = pd.Index([*values, np.nan], dtype=object)
    return Coded(codes, uniques, numeric=False, all_used=False)


# -- validating a table ---------------------------------------------------------------------------------------
def validate_file(path: Path, qi: list[str], sa: list[str], thresholds: PrivacyThresholds, *, sep: str = ",",
                  na_values: list[str] | None = None, population: Path | None = None,
                  hierarchies: dict[str, Path] | None = None, seed: int = 0, attack: int = 0) -> PrivacyReport:
    """Measure and gate any table (its equivalence classes over ``qi``).

    ``attack``: run paper 002's random-query attacker with up to this many queries (0: not run). The table is
    both the attacker's knowledge and the target (see :func:`ppdp.tasks.privacy.risk.random_query_attack`).

    Without a population table, the quasi-identifiers are measured through codes (their factorization): every
    measure of a standalone table uses them through equality only (equivalence classes, the attacker's
    matching), and :func:`ppdp.tasks.core.groups.equivalence_class_ids` numbers classes by each column's codes
    in order of first appearance, which any one-to-one coding keeps. So the classes, their numbering, every
    measure and the attacker's answers are those of the raw values, while a large table is read and factorized
    once. With a population, the raw values are kept (journalist risk matches the two tables' values).
    """
    where = str(path)
    source = _source(path, sep, na_values)
    needs_sa = thresholds.sensitive_gates()
    if population is None and source.format == "parquet":
        frame, coded = _read_parquet_coded(source, qi, sa, where)
    else:
        frame = read_table(source)
        coded = check_table_columns(frame, qi, sa, where)
        if population is None:
            frame = pd.DataFrame({**{name: coded[name].codes for name in qi},
                                  **{name: frame[name].reset_index(drop=True) for name in sa}},
                                 index=pd.RangeIndex(len(frame)), copy=False)
    del coded
    if needs_sa and not sa:
        raise InputError(f"--{needs_sa[0]}: this gate needs a sensitive attribute (--sa)")
    pop = None
    if population is not None:
        pop = read_table_file(population, sep, na_values)
        missing = [q for q in qi if q not in pop.columns]
        if missing:
            raise InputError(f"population {population}: column '{missing[0]}' is not in the table")
    hier = load_hierarchies(hierarchies or {}) if hierarchies else None
    try:
        report = measure_table(frame, qi, sa, thresholds=thresholds, population=pop, hierarchies=hier, seed=seed,
                               attack_queries=attack)
    except ValidationError:
        raise
    except ValueError as exc:  # the measures name the column or parameter, never a value
        raise InputError(f"{path}: {str(exc).splitlines()[0]}") from None
    return check_gates(report, thresholds)


def report_json(report: PrivacyReport, path: str | None = None) -> dict[str, Any]:
    """The report as JSON: pyCANON's measures at the top level under pyCANON's names and shapes, ours beside."""
    m = report.measures
    out: dict[str, Any] = {"file": path} if path else {}
    out.update(rows=report.records, quasi_identifiers=report.quasi_identifiers,
               sensitive_attributes=report.sensitive_attributes, equivalence_classes=report.groups)
    for name in PYCANON_NAMES:
        value = getattr(m, name) if m is not None else None
        out[name] = list(value) if isinstance(value, tuple) else value
    out["entropy_l_diversity_value"] = m.entropy_l_value if m else None
    out["hierarchical_t_closeness"] = m.hierarchical_t_closeness if m else None
    out["risk"] = report.risk.model_dump(mode="json") if report.risk else None
    out["attacker"] = report.attacker.model_dump(mode="json") if report.attacker else None
    if report.synthetic:
        out["synthetic"] = report.synthetic.model_dump(mode="json")
    out["gates"] = [g.model_dump(mode="json") for g in report.gates]
    out["passed"] = report.passed
    return out
