"""The random-query attacker of paper 002: queries drawn from the original table, asked of the original and of
the release.

Peters, *Avoiding the Destruction of Data-Mining Utility in Privacy Preserving Data Publishing* (2011),
section 4.2, Figure 4.3 and appendix A.1 (``get-queries``). A query is what an attacker knows about one
individual: the values of some of the individual's quasi-identifiers. For each query and each table, the
attacker's probability of re-identifying the individual is ``1 / (records matching the query)`` (scenario S1),
and the probability of associating the individual with sensitive value ``a`` is ``P(S2|a) = (records matching
the query with value a) / (records matching the query)`` (scenario S2). The paper asks the same queries of the
original and of each sanitized table and compares the distributions (quartile charts).

Where the paper is silent, :func:`random_query_attack` chooses:

* **Whose values.** ``get-query`` is not shown. A query describes one individual ("each query represents
  what an attacker knows about an individual"), so each draw picks a record of ``original`` uniformly (with
  replacement across draws) and takes that record's values; a query therefore always matches at least its
  own record in the original.
* **How many and which.** The number of known quasi-identifiers is uniform on 1..len(qis); which ones: a
  uniform subset of that size (the first ones of a uniform random permutation).
* **query-worth** is not shown either. Drawn from a record, every query describes someone in the original,
  which is the only worth test applied; a draw repeating a kept query (same known columns and values) is a
  draw that did not grow the list.
* **How many queries.** The paper's n differs per data set and no total is given: ``stop_after`` (n,
  default 100) and a cap of ``queries`` (default 2000) kept queries, whichever comes first. Draws are
  generated in vectorized batches; the stopping rule is still checked after every draw.
* **Matching.** A record matches a query when it equals the query on every known quasi-identifier: exact
  equality after :meth:`pandas.Index.get_indexer` (37 matches 37.0, the text '37' does not match 37), a
  missing value matches a missing value (as ppdp's equivalence classes treat it). A suppressed cell
  (missing, or a marker such as '?' or '*') or a generalized value (an interval, a coarser category) does
  not match the raw value, as SAP's suppression marker does not in the paper. For a generalized release
  the attacker would first generalize the query; that attacker is not modelled here, so for such releases
  the figures show what exact knowledge finds, and the class-based measures (k, prosecutor risk) are the
  ones to read.
* **No match.** A query matching no record of a table (possible on a release) has no defined ``1/0``: it
  counts as re-identification probability 0 and association 0 (the attacker finds nobody), and
  ``matched_queries`` says how many did match. Statistics are over all queries, so the original and the
  release are compared on the same query set, as in Figure 4.3.
* **S2 summary.** The paper defines ``P(S2|a)`` for every sensitive value ``a``; per query we keep the
  largest (the attacker's best guess). A missing sensitive value (e.g. SAP's suppressed SAV) is not a value
  the attacker can learn: it counts in the denominator but is never ``a``. With several sensitive
  attributes, the largest over them.
* **Statistics.** Besides the paper's median and quartiles (numpy's linear interpolation): the mean, the
  max, the share of queries matching exactly one record (``identifying_share``) and the median number of
  records a query matches.

Plain functions over pandas tables; no Prefect. Loops run over queries and columns, never over records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ppdp.tasks.privacy.risk._checks import check_columns, check_int, check_nonempty

__all__ = [
    "DEFAULT_QUERIES",
    "DEFAULT_STOP_AFTER",
    "QueryAnswers",
    "QueryAttackResult",
    "RandomQueries",
    "evaluate_queries",
    "generate_random_queries",
    "random_query_attack",
]

DEFAULT_QUERIES = 2000  # the most queries kept (the paper gives no number: its list grows until the stop rule)
DEFAULT_STOP_AFTER = 100  # the paper's n: stop once the list has not grown for this many successive draws
_BATCH = 4096  # draws generated per vectorized batch (the duplicate check is a loop over draws)


# --------------------------------------------------------------------------------------------------------------
# queries
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RandomQueries:
    """Distinct attacker queries over quasi-identifiers ``qi``.

    Attributes
    ----------
    qi
        The quasi-identifier columns, in order.
    known
        Boolean array (queries x len(qi)): which quasi-identifiers each query knows.
    values
        Object array (queries x len(qi)): the known value, where ``known`` is True (ignore the other cells).
    records
        Row position, in the table the queries were drawn from, of the individual each query describes (-1 for
        queries built with :meth:`from_records`).
    draws
        How many random draws the generator made (0 for queries built with :meth:`from_records`).
    """

    qi: tuple[str, ...]
    known: np.ndarray = field(compare=False, repr=False)
    values: np.ndarray = field(compare=False, repr=False)
    records: np.ndarray = field(compare=False, repr=False)
    draws: int = 0

    def __len__(self) -> int:
        return int(self.known.shape[0])

    def as_records(self) -> list[dict[str, object]]:
        """Each query as ``{column: value}`` over the quasi-identifiers it knows."""
        return [
            {col: self.values[i, j] for j, col in enumerate(self.qi) if self.known[i, j]} for i in range(len(self))
        ]

    @classmethod
    def from_records(cls, qi: Sequence[str], queries: Sequence[Mapping[str, object]]) -> RandomQueries:
        """Queries given explicitly, each a mapping from some of ``qi`` to a value (at least one)."""
        cols = list(qi)
        if not cols or len(set(cols)) != len(cols):
            raise ValueError("qi must name at least one column, each once")
        index = {c: j for j, c in enumerate(cols)}
        known = np.zeros((len(queries), len(cols)), dtype=bool)
        values = np.empty((len(queries), len(cols)), dtype=object)
        for i, query in enumerate(queries):
            if not query:
                raise ValueError("queries: every query must know at least one quasi-identifier")
            for col, value in query.items():
                if col not in index:
                    raise ValueError(f"queries column {col!r} is not in qi")
                known[i, index[col]] = True
                values[i, index[col]] = value
        return cls(qi=tuple(cols), known=known, values=values, records=np.full(len(queries), -1, dtype=np.int64))


class _Coded:
    """The quasi-identifier columns of one table, factorized once; posting lists built on demand.

    Codes: ``pd.factorize(..., use_na_sentinel=False)`` per column, so a missing value is a value of its own (as
    in :func:`ppdp.tasks.core.groups.equivalence_class_ids`), stored in the smallest unsigned type that holds them
    (NumPy sorts 8- and 16-bit integers by radix). A posting list is the rows holding one code of one column, in
    row order; only columns a query actually filters on get one.
    """

    def __init__(self, frame: pd.DataFrame, qi: Sequence[str]) -> None:
        self.n = len(frame)
        self.codes: list[np.ndarray] = []
        self.uniques: list[pd.Index] = []
        self.counts: list[np.ndarray] = []
        for col in qi:
            codes, uniques = pd.factorize(frame[col], use_na_sentinel=False)
            card = max(len(uniques), 1)
            self.codes.append(codes.astype(_smallest_uint(card), copy=False))
            self.uniques.append(pd.Index(uniques))
            self.counts.append(np.bincount(codes, minlength=card))
        self._order: dict[int, np.ndarray] = {}
        self._starts: dict[int, np.ndarray] = {}

    def posting(self, j: int, code: int) -> np.ndarray:
        if j not in self._order:
            self._order[j] = np.argsort(self.codes[j], kind="stable")
            self._starts[j] = np.concatenate([[0], np.cumsum(self.counts[j])])
        starts = self._starts[j]
        return self._order[j][starts[code] : starts[code + 1]]

    def lookup(self, j: int, values: np.ndarray) -> np.ndarray:
        """This table's code of each value in column ``j``; -1 where no record holds it. Equality as in
        :meth:`pandas.Index.get_indexer` (so 37 finds 37.0, '37' does not find 37); any missing value finds this
        column's missing value."""
        uniques = self.uniques[j]
        missing = pd.isna(np.asarray(values, dtype=object))
        # pandas-stubs types get_indexer's target as Index; pandas takes any list-like (an array here)
        found = uniques.get_indexer(np.asarray(values, dtype=object))  # type: ignore[arg-type]
        out = np.asarray(found, dtype=np.int64)
        if missing.any():
            na_at = np.flatnonzero(np.asarray(pd.isna(uniques)))
            out[missing] = na_at[0] if na_at.size else -1
        return out


def _smallest_uint(card: int) -> type:
    for dtype in (np.uint8, np.uint16, np.uint32):
        if card <= np.iinfo(dtype).max + 1:
            return dtype
    return np.int64


def _sensitive_codes(frame: pd.DataFrame, sensitive: Sequence[str]) -> list[tuple[np.ndarray, int]]:
    """Per sensitive attribute: codes 0..m-1 of its present values, m for a missing value, and m."""
    out = []
    for col in sensitive:
        codes, uniques = pd.factorize(frame[col], use_na_sentinel=True)
        m = len(uniques)
        out.append((np.where(codes < 0, m, codes).astype(np.int64), m))
    return out


def generate_random_queries(
    original: pd.DataFrame,
    qi: Sequence[str],
    *,
    queries: int = DEFAULT_QUERIES,
    stop_after: int = DEFAULT_STOP_AFTER,
    seed: int = 0,
) -> RandomQueries:
    """Random attacker queries drawn from the records of ``original`` (see :func:`random_query_attack`)."""
    return _generate(original, _check_qi(original, qi), queries, stop_after, seed)[0]


def _check_qi(frame: pd.DataFrame, qi: Sequence[str], table: str = "original") -> list[str]:
    cols = check_columns(frame, qi, "qi", table)
    if not cols:
        raise ValueError("qi must name at least one column")
    check_nonempty(frame, table)
    return cols


def _generate(original: pd.DataFrame, cols: list[str], queries: int, stop_after: int, seed: int
              ) -> tuple[RandomQueries, _Coded, np.ndarray]:
    """The queries, the coded original, and each query's codes in it (queries x m, -1 where unknown)."""
    queries = check_int(queries, "queries", 1)
    stop_after = check_int(stop_after, "stop_after", 1)
    seed = check_int(seed, "seed", 0)
    coded = _Coded(original, cols)
    n, m = coded.n, len(cols)
    rng = np.random.default_rng(seed)
    seen: set[bytes] = set()
    kept_codes: list[np.ndarray] = []
    kept_records: list[int] = []
    stale = draws = 0
    while stale < stop_after and len(kept_codes) < queries:
        batch = min(_BATCH, max(64, 2 * (queries - len(kept_codes)) + stop_after))
        records = rng.integers(0, n, batch)  # the individual the attacker targets
        sizes = rng.integers(1, m + 1, batch)  # how many of the target's quasi-identifiers the attacker knows
        ranks = np.argsort(np.argsort(rng.random((batch, m)), axis=1), axis=1)  # a uniform permutation per draw
        known = ranks < sizes[:, None]  # ...and which: the first `size` of the permutation, a uniform subset
        codes = np.column_stack([coded.codes[j][records].astype(np.int64) for j in range(m)])
        codes[~known] = -1
        for i in range(batch):
            draws += 1
            key = codes[i].tobytes()
            if key in seen:  # a repeat does not grow the list
                stale += 1
            else:
                seen.add(key)
                kept_codes.append(codes[i])
                kept_records.append(int(records[i]))
                stale = 0
            if stale >= stop_after or len(kept_codes) >= queries:
                break
    q_codes = np.array(kept_codes, dtype=np.int64).reshape(len(kept_codes), m)
    known = q_codes >= 0
    values = np.empty((len(kept_codes), m), dtype=object)
    for j in range(m):
        rows = np.flatnonzero(known[:, j])
        values[rows, j] = np.asarray(coded.uniques[j].take(q_codes[rows, j]), dtype=object)
    result = RandomQueries(qi=tuple(cols), known=known, values=values,
                           records=np.array(kept_records, dtype=np.int64), draws=draws)
    return result, coded, q_codes


# --------------------------------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryAnswers:
    """What the queries achieve on one table (one entry per query, in query order).

    Attributes
    ----------
    matches
        Number of records matching each query (0: the query describes nobody in this table).
    reidentification
        ``1 / matches`` (S1); 0 where no record matches (the attacker finds nobody).
    association
        Per query, the largest ``P(S2|a)`` over the present values ``a`` of each sensitive attribute, and the
        largest over the sensitive attributes; 0 where no record matches. None without a sensitive attribute.
    sensitive
        The sensitive attributes (empty: none).
    """

    matches: np.ndarray = field(repr=False)
    reidentification: np.ndarray = field(repr=False)
    association: np.ndarray | None = field(repr=False)
    sensitive: tuple[str, ...] = ()

    @property
    def queries(self) -> int:
        return int(self.matches.size)

    @property
    def matched_queries(self) -> int:
        """Queries matching at least one record."""
        return int(np.count_nonzero(self.matches))

    @property
    def matches_median(self) -> float:
        """Median number of records a query matches (NaN with no query)."""
        return float(np.median(self.matches)) if self.matches.size else float("nan")

    @property
    def identifying_share(self) -> float:
        """Share of queries matching exactly one record: re-identification is certain (NaN with no query)."""
        return float(np.mean(self.matches == 1)) if self.matches.size else float("nan")

    def reidentification_summary(self) -> dict[str, float]:
        """Mean, quartiles (numpy's linear interpolation) and max of the re-identification probability."""
        return _summary(self.reidentification)

    def association_summary(self) -> dict[str, float] | None:
        """The same statistics of the sensitive association, or None without a sensitive attribute."""
        return None if self.association is None else _summary(self.association)


def _summary(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        nan = float("nan")
        return dict(mean=nan, q1=nan, median=nan, q3=nan, max=nan)
    q1, median, q3 = (float(v) for v in np.quantile(values, [0.25, 0.5, 0.75]))
    return dict(mean=float(values.mean()), q1=q1, median=median, q3=q3, max=float(values.max()))


@dataclass(frozen=True)
class QueryAttackResult:
    """Paper 002's attacker on an original table and its release: the same queries asked of both.

    Attributes
    ----------
    queries
        The queries (drawn from the original).
    original, release
        What they achieve on each table.
    same_table
        True when the release is the original itself (a standalone table was validated): ``release`` is
        ``original``.
    stop_after
        The stopping rule's n.
    """

    queries: RandomQueries
    original: QueryAnswers
    release: QueryAnswers
    same_table: bool
    stop_after: int


def _answer(coded: _Coded, q_codes: np.ndarray, sensitive: list[tuple[np.ndarray, int]],
            names: tuple[str, ...]) -> QueryAnswers:
    """Ask every query (codes of this table, -1 unknown, -2 value absent from this table) of ``coded``."""
    q, m = q_codes.shape
    matches = np.zeros(q, dtype=np.int64)
    assoc = np.zeros(q, dtype=float) if sensitive else None
    # single-column queries: counts and sensitive distributions per value, from one bincount per column
    per_value: dict[int, list[np.ndarray] | None] = {}
    known = q_codes != -1
    for i in range(q):  # a loop over queries; matching itself is vectorized
        cols = np.flatnonzero(known[i])
        vals = q_codes[i, cols]
        if (vals < 0).any():  # a known value no record of this table holds
            continue
        if cols.size == 1:
            j, v = int(cols[0]), int(vals[0])
            matches[i] = coded.counts[j][v]
            if assoc is not None and matches[i]:
                if j not in per_value:
                    per_value[j] = _value_distributions(coded, j, sensitive)
                tables = per_value[j]
                if tables is not None:
                    assoc[i] = max(float(t[v, :-1].max(initial=0)) for t in tables) / matches[i]
                    continue
                rows = coded.posting(j, v)
                assoc[i] = _best_share(rows, sensitive)
            continue
        lengths = [int(coded.counts[c][v]) for c, v in zip(cols, vals)]
        first = int(np.argmin(lengths))
        rows = coded.posting(int(cols[first]), int(vals[first]))
        for k, (c, v) in enumerate(zip(cols, vals)):
            if k != first and rows.size:
                rows = rows[coded.codes[c][rows] == v]
        matches[i] = rows.size
        if assoc is not None and rows.size:
            assoc[i] = _best_share(rows, sensitive)
    with np.errstate(divide="ignore"):
        reid = np.where(matches > 0, 1.0 / np.maximum(matches, 1), 0.0)
    return QueryAnswers(matches=matches, reidentification=reid, association=assoc, sensitive=names)


def _value_distributions(coded: _Coded, j: int, sensitive: list[tuple[np.ndarray, int]]) -> list[np.ndarray] | None:
    """Per sensitive attribute, the (value of column j) x (sensitive code) count table, when small enough."""
    card = len(coded.counts[j])
    if any(card * (m + 1) > 4 * coded.n + 4096 for _, m in sensitive):
        return None
    column = coded.codes[j].astype(np.int64)
    return [np.bincount(column * (m + 1) + codes, minlength=card * (m + 1)).reshape(card, m + 1)
            for codes, m in sensitive]


def _best_share(rows: np.ndarray, sensitive: list[tuple[np.ndarray, int]]) -> float:
    """Largest share of one present sensitive value among ``rows`` (missing values count in the denominator)."""
    best = 0
    for codes, m in sensitive:
        counts = np.bincount(codes[rows], minlength=m + 1)
        best = max(best, int(counts[:m].max(initial=0)))
    return best / rows.size


def _codes_in(coded: _Coded, queries: RandomQueries) -> np.ndarray:
    """Each query's codes in ``coded``: -1 unknown, -2 a value absent from the table."""
    q, m = queries.known.shape
    out = np.full((q, m), -1, dtype=np.int64)
    for j in range(m):
        rows = np.flatnonzero(queries.known[:, j])
        if rows.size:
            found = coded.lookup(j, queries.values[rows, j])
            out[rows, j] = np.where(found >= 0, found, -2)
    return out


def _check_sensitive(frame: pd.DataFrame, sensitive: str | Sequence[str] | None, qi: Sequence[str],
                     table: str) -> tuple[str, ...]:
    if sensitive is None:
        return ()
    names = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    for name in names:
        if name not in frame.columns:
            raise ValueError(f"sensitive column {name!r} is not in {table}")
        if name in qi:
            raise ValueError(f"sensitive column {name!r} is also a quasi-identifier")
    if len(set(names)) != len(names):
        raise ValueError("sensitive names a column twice")
    return tuple(names)


def evaluate_queries(frame: pd.DataFrame, queries: RandomQueries,
                     sensitive: str | Sequence[str] | None = None) -> QueryAnswers:
    """Ask ``queries`` of ``frame``: re-identification (S1) and sensitive association (S2) per query.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table attacked (the original or a release holding the queries' quasi-identifier columns).
    queries : RandomQueries
        From :func:`generate_random_queries` or :meth:`RandomQueries.from_records`.
    sensitive : str or sequence of str, optional
        Sensitive attribute column(s) for S2.

    Returns
    -------
    QueryAnswers

    Raises
    ------
    ValueError
        Unknown column, empty table, or a sensitive attribute that is also a quasi-identifier.

    Notes
    -----
    See :func:`random_query_attack` for the matching rule and every choice where the paper is silent.
    """
    cols = check_columns(frame, queries.qi, "qi", "frame")
    check_nonempty(frame, "frame")
    names = _check_sensitive(frame, sensitive, cols, "frame")
    coded = _Coded(frame, cols)
    return _answer(coded, _codes_in(coded, queries), _sensitive_codes(frame, names), names)


def _check_tables(original: pd.DataFrame, other: pd.DataFrame | None, qis: Sequence[str],
                  sa: str | Sequence[str] | None) -> tuple[list[str], tuple[str, ...]]:
    """The quasi-identifier and sensitive columns, checked in the original and in a release other than it."""
    cols = _check_qi(original, qis)
    names = _check_sensitive(original, sa, cols, "original")
    if other is not None:
        check_columns(other, cols, "qis", "release")
        check_nonempty(other, "release")
        _check_sensitive(other, names, cols, "release")
    return cols, names


def random_query_attack(
    original: pd.DataFrame,
    release: pd.DataFrame | None,
    qis: Sequence[str],
    sa: str | Sequence[str] | None = None,
    *,
    queries: int = DEFAULT_QUERIES,
    stop_after: int = DEFAULT_STOP_AFTER,
    seed: int = 0,
) -> QueryAttackResult:
    """Paper 002's random-query attacker: queries drawn from ``original``, asked of ``original`` and ``release``.

    Parameters
    ----------
    original : pandas.DataFrame
        The table the attacker's knowledge comes from (the sanitizer's input). Not empty.
    release : pandas.DataFrame or None
        The published table, holding the ``qis`` (and ``sa``) columns. ``None``, or ``original`` itself, when a
        standalone table is validated (``ppdp validate FILE``): the table is then both the attacker's
        knowledge and the target, the queries are asked once, and ``release`` in the result is ``original``.
    qis : sequence of str
        Quasi-identifier columns (at least one).
    sa : str or sequence of str, optional
        Sensitive attribute column(s) for S2.
    queries : int, default 2000
        The most queries kept (at least 1).
    stop_after : int, default 100
        The paper's stopping rule: stop once the query list has not grown for this many successive draws
        (at least 1).
    seed : int, default 0
        Seed of ``numpy.random.default_rng``: same seed and tables, same queries and answers.

    Returns
    -------
    QueryAttackResult

    Raises
    ------
    ValueError
        Unknown or repeated column, empty ``qis``, an empty table, a sensitive attribute that is also a
        quasi-identifier, or ``queries`` / ``stop_after`` below 1.

    Notes
    -----
    Peters (2011), section 4.2 and Figure 4.3: a random query generator "decides what and how many QID values
    the attacker knows", keeps a duplicate-free list of queries (``get-queries``, appendix A.1, also applies a
    ``query-worth`` test) and outputs it once the list "does not increase after n successive queries"; each
    query is then asked of the original and of every sanitized table: ``P = 1 / (sum of records that match the
    query)`` (S1) and ``P(S2|a) = (records matching the query with SAV = a) / (records matching the query)``
    (S2). The paper reports these per-query probabilities as quartile charts (median, lower and upper
    quartile).

    Where the paper is silent (whose values, how many queries, query-worth, matching, no match, the S2 summary,
    the statistics), the choices made here are listed in the module docstring.

    Cost: each table's quasi-identifier columns are factorized once; a query reads the posting list of its
    rarest known value and filters it on its other known values (single-value queries read precomputed
    counts), so a query never scans the whole table.
    """
    other = None if release is None or release is original else release  # None: the release is the original
    same = other is None
    cols, names = _check_tables(original, other, qis, sa)
    drawn, coded, q_codes = _generate(original, cols, queries, stop_after, seed)
    on_original = _answer(coded, q_codes, _sensitive_codes(original, names), names)
    if other is None:
        on_release = on_original
    else:
        coded_release = _Coded(other, cols)
        on_release = _answer(coded_release, _codes_in(coded_release, drawn), _sensitive_codes(other, names), names)
    return QueryAttackResult(queries=drawn, original=on_original, release=on_release, same_table=same,
                             stop_after=int(stop_after))
