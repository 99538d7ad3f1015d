"""Utility: hold out original rows, train a classifier on the release, test it on the held-out rows.

The held-out rows are never sanitized and never published. The same classifier trained on the original
training rows gives the baseline; the gate compares the two accuracies.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import warnings
from collections import OrderedDict

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.release import PartsRelease
from ppdp.schemas.reports import GateResult, Roles
from ppdp.schemas.spec import STRONG_CLASSIFIER, UtilitySpec
from ppdp.schemas.utility import ClassAccuracy, DeltaR, MarginalDistances, RegressionScore, TstrScore, UtilityReport
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.errors import InputError, SpecError


def marginals_line(m: MarginalDistances | None) -> str:
    """The label-free utility figures in one line (log, CLI summary)."""
    if m is None:
        return "no label-free figures"

    def f(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.4f}"

    return (f"1-way marginal distance {f(m.one_way)}, 2-way {f(m.two_way)} ({m.columns} columns, {m.pairs} pairs), "
            f"correlation difference {f(m.correlation_difference)} (0 = same as the input)")


def tstr_lines(tstr: list[TstrScore], regression: list[RegressionScore]) -> list[str]:
    """The TSTR accuracies and the regression targets' R^2, one line each (log, CLI summary)."""

    def f(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.4f}"

    return ([f"TSTR {t.classifier} {t.accuracy:.4f} (trained on original rows {t.accuracy_original:.4f}; both tested "
             "on held-out real rows)" for t in tstr]
            + [f"regression {r.column} R^2 {f(r.r2)} (trained on original rows {f(r.r2_original)})"
               for r in regression])


def split_holdout(frame: pd.DataFrame, class_column: str, fraction: float, seed: int
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stratified split into (training rows, held-out rows); indexes are reset, order is seeded."""
    train, test = holdout_positions(frame, class_column, fraction, seed)
    return frame.iloc[train].reset_index(drop=True), frame.iloc[test].reset_index(drop=True)


def split_holdout_keyed(frame: pd.DataFrame, class_column: str | None, fraction: float, seed: int,
                        fingerprints: np.ndarray, stable: bool = False
                        ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """:func:`split_holdout`, also returning the rows' ``fingerprints`` (one per row of ``frame``) in the order of
    the training rows then the held-out rows. ``stable``: a record is held out by its fingerprint (a keyed hash)
    rather than by a seeded stratified draw, so that it falls on the same side in every release of a growing table
    (what keeping group memberships across a series needs); about ``fraction`` of the rows are held out, not
    stratified. ``class_column`` None: no classifier is trained, so nothing is held out (every row trains; the
    held-out rows are an empty table of the same columns)."""
    fingerprints = np.asarray(fingerprints, dtype=np.int64)
    if class_column is None:
        return frame.reset_index(drop=True), frame.iloc[:0].reset_index(drop=True), fingerprints
    if stable:
        share = (fingerprints.view(np.uint64) >> np.uint64(11)).astype(np.float64) / float(2**53)
        held = share < fraction
        train, test = np.flatnonzero(~held), np.flatnonzero(held)
        if not test.size or not train.size:
            raise InputError(f"input has {len(frame)} rows: too few to hold out {fraction:.0%} of the records")
    else:
        train, test = holdout_positions(frame, class_column, fraction, seed)
    return (frame.iloc[train].reset_index(drop=True), frame.iloc[test].reset_index(drop=True),
            np.concatenate([fingerprints[train], fingerprints[test]]))


def join_rows(train: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """Every input record after the hold-out (training rows first, then the held-out ones), index reset."""
    return pd.concat([train, test], ignore_index=True)


def holdout_positions(frame: pd.DataFrame, class_column: str, fraction: float, seed: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The positions of :func:`split_holdout`'s (training rows, held-out rows) in ``frame``."""
    labels = frame[class_column]
    counts = labels.value_counts(dropna=False)
    if len(counts) < 2:
        raise InputError(f"class column '{class_column}' has a single class: nothing to classify")
    if counts.min() < 2:
        raise InputError(
            f"class column '{class_column}': {int((counts < 2).sum())} class(es) with a single record cannot be "
            "split into training and held-out rows"
        )
    n_test = max(int(round(fraction * len(frame))), len(counts))
    if len(frame) - n_test < len(counts):
        raise InputError(f"input has {len(frame)} rows: too few to hold out {fraction:.0%} by class")
    from sklearn.model_selection import train_test_split  # heavy: scikit-learn, loaded by the steps that use it

    train, test = train_test_split(np.arange(len(frame)), test_size=n_test, stratify=labels,
                                   random_state=seed % (2**32))
    return train, test


def make_classifier(name: str, seed: int = 0):
    from sklearn.linear_model import LogisticRegression  # heavy: scikit-learn, loaded when a classifier is made
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    if name == "knn1":
        return KNeighborsClassifier(n_neighbors=1, algorithm="brute")  # 4x faster than k-d trees here
    if name == "knn5":
        return KNeighborsClassifier(n_neighbors=5, algorithm="brute")
    if name == "naive_bayes":
        return GaussianNB()
    if name == "decision_tree":
        return DecisionTreeClassifier(random_state=seed)
    if name == "j48":  # WEKA's J48 read as an entropy tree with at least two records per leaf (its -M 2)
        return DecisionTreeClassifier(criterion="entropy", min_samples_leaf=2, random_state=seed)
    if name == "svm":  # WEKA SMO's default kernel is linear; liblinear fits it in seconds on 30,000 rows
        from sklearn.svm import LinearSVC  # heavy: scikit-learn

        return LinearSVC(C=1.0, dual="auto", max_iter=5000, random_state=seed % (2**32))
    if name == "logistic_regression":
        return LogisticRegression(max_iter=1000)
    if name == STRONG_CLASSIFIER:  # early stopping on a seeded 10% of the training rows keeps it cheap
        from sklearn.ensemble import HistGradientBoostingClassifier  # heavy: scikit-learn

        return HistGradientBoostingClassifier(early_stopping=True, random_state=seed % (2**32))
    raise ValueError(f"unknown classifier {name!r}")


def _fit(model, x: np.ndarray, y: np.ndarray):
    """``model.fit(x, y)``; a gradient-boosting model stops early only when its 10% validation split can be drawn
    (stratified by class for a classifier: at least two rows of every class, and a class per row on both sides)."""
    if getattr(model, "early_stopping", None) is True:
        n = len(y)
        n_val = int(np.ceil(model.validation_fraction * n))
        from sklearn.base import is_classifier  # heavy: scikit-learn

        if is_classifier(model):
            counts = np.unique(y, return_counts=True)[1]
            feasible = counts.size > 0 and counts.min() >= 2 and n_val >= len(counts) and n - n_val >= len(counts)
        else:
            feasible = n >= 20
        if not feasible:
            model.set_params(early_stopping=False)
    return model.fit(x, y)


def feature_encoder(train_original: pd.DataFrame, roles: Roles, standardize: bool = True) -> TableEncoder:
    """Encoder of the classifier's features (every published attribute but identifiers and the class);
    standardized by default (``standardize=False`` keeps raw units, as the condensation paper's 1-NN did)."""
    return TableEncoder(columns=roles.attributes, kinds=roles.kinds(), orders=roles.orders(),
                        standardize=standardize).fit(train_original)


def accuracy(train: pd.DataFrame, test: pd.DataFrame, roles: Roles, classifier: str, encoder: TableEncoder,
             seed: int = 0) -> tuple[float, dict[str, float], dict[str, int]]:
    """Overall accuracy and accuracy per class (recall) of ``classifier`` trained on ``train``."""
    cls = roles.class_column
    assert cls is not None
    if train[cls].isna().any():  # a suppressed class value (SAP's S2) teaches nothing: as the paper's 1-NN
        train = train.loc[train[cls].notna()]
    y_train = train[cls].astype(str).to_numpy()
    y_test = test[cls].astype(str).to_numpy()
    from sklearn.exceptions import ConvergenceWarning  # heavy: scikit-learn

    model = make_classifier(classifier, seed)
    with warnings.catch_warnings():  # a linear SVM that stops at max_iter is still a fair utility figure
        warnings.simplefilter("ignore", ConvergenceWarning)
        _fit(model, encoder.transform(train), y_train)
    return scored(model.predict(encoder.transform(test)), y_test)


_BASELINE_KEY = secrets.token_hex(8)  # keys the frames' hashes in this process's memory (never written anywhere)
_BASELINES: OrderedDict[bytes, tuple[float, dict[str, float], dict[str, int]]] = OrderedDict()
_BASELINES_HELD = 64
_BASELINE_LOCK = threading.Lock()
_BASELINE_ONE: dict[bytes, threading.Lock] = {}


def _frame_digest(frame: pd.DataFrame, into) -> None:
    into.update(repr([(str(c), str(t)) for c, t in frame.dtypes.items()]).encode())
    into.update(pd.util.hash_pandas_object(frame, index=True, hash_key=_BASELINE_KEY).to_numpy().tobytes())


def original_accuracy(train_original: pd.DataFrame, test: pd.DataFrame, roles: Roles, classifier: str,
                      encoder: TableEncoder, seed: int = 0) -> tuple[float, dict[str, float], dict[str, int]]:
    """:func:`accuracy` of ``classifier`` trained on the original training rows (``encoder`` fitted on them, as
    :func:`feature_encoder` fits it): the baseline every utility check of those rows compares with, the same for
    every method ``ppdp compare`` runs on them. Measured once per process for the same rows, roles, classifier and
    seed (the figures, in memory, under a key of the rows' hashes keyed by a per-process secret); a fitted model is
    deterministic for its seed, so the figure is the one :func:`accuracy` gives."""
    digest = hashlib.blake2b(digest_size=32)
    _frame_digest(train_original, digest)
    _frame_digest(test, digest)
    digest.update(roles.model_dump_json().encode())
    digest.update(repr((classifier, int(seed), bool(encoder.standardize))).encode())
    key = digest.digest()
    with _BASELINE_LOCK:
        one = _BASELINE_ONE.setdefault(key, threading.Lock())
    with one:  # two methods side by side wait for one fit
        with _BASELINE_LOCK:
            hit = _BASELINES.get(key)
        if hit is None:
            hit = accuracy(train_original, test, roles, classifier, encoder, seed)
            with _BASELINE_LOCK:
                _BASELINES[key] = hit
                while len(_BASELINES) > _BASELINES_HELD:
                    _BASELINE_ONE.pop(_BASELINES.popitem(last=False)[0], None)
    acc, per_class, support = hit
    return acc, dict(per_class), dict(support)


def fit_baselines(train_original: pd.DataFrame, test: pd.DataFrame, roles: Roles, spec: UtilitySpec,
                  seed: int = 0) -> None:
    """Measure, ahead of the utility check, the original rows' baseline of every classifier it asks for (the
    spec's, ``delta_r``'s, ``tstr``'s): held in this process's memory (:func:`original_accuracy`), so that a check
    running later in this process reads them; one asking while this still fits waits for it."""
    if roles.class_column is None or spec.classifier == "none":
        return
    encoder = feature_encoder(train_original, roles)
    names = [spec.classifier, *(spec.delta_r.classifiers if spec.delta_r is not None else []), *spec.tstr]
    for name in reversed(dict.fromkeys(names)):  # the check asks for the spec's first: fitted last here
        original_accuracy(train_original, test, roles, name, encoder, seed)


def tstr_scores(train_original: pd.DataFrame, released: pd.DataFrame, test: pd.DataFrame, roles: Roles,
                spec: UtilitySpec, encoder: TableEncoder, seed: int = 0,
                known: dict[str, tuple[float, float]] | None = None,
                released_view: tuple[pd.DataFrame, Roles, TableEncoder] | None = None) -> list[TstrScore]:
    """Train on the release, test on real rows, for each classifier of ``spec.tstr``: its accuracy on the held-out
    rows trained on ``released`` and, for the baseline, on the original training rows. ``known`` and
    ``released_view`` as :func:`delta_r` takes them."""
    view_test, view_roles, view_encoder = released_view or (test, roles, encoder)
    out = []
    for name in dict.fromkeys(spec.tstr):
        if known and name in known:
            acc, acc0 = known[name]
        else:
            acc = accuracy(released, view_test, view_roles, name, view_encoder, seed)[0]
            acc0 = original_accuracy(train_original, test, roles, name, encoder, seed)[0]
        out.append(TstrScore(classifier=name, accuracy=acc, accuracy_original=acc0))
    return out


def regression_r2(train: pd.DataFrame, test: pd.DataFrame, truth: pd.Series, target: str, roles: Roles,
                  seed: int = 0) -> float | None:
    """R^2 on ``truth`` (the held-out rows' real values of ``target``, aligned with ``test``) of a seeded
    HistGradientBoostingRegressor trained on ``train`` to predict ``target`` from every other published attribute
    (the class column too), features encoded by an encoder fitted on ``train``; None when ``train`` does not
    publish ``target`` as numbers or no row of it or of ``truth`` has a value."""
    from sklearn.ensemble import HistGradientBoostingRegressor  # heavy: scikit-learn
    from sklearn.metrics import r2_score

    if target not in train.columns or not pd.api.types.is_numeric_dtype(train[target]):
        return None
    features = [c for c in [*roles.attributes, *([roles.class_column] if roles.class_column else [])]
                if c != target and c in train.columns and c in test.columns]
    y_train = pd.to_numeric(train[target], errors="coerce").to_numpy(dtype=float)
    y_true = pd.to_numeric(truth, errors="coerce").to_numpy(dtype=float)
    keep, scored_rows = ~np.isnan(y_train), ~np.isnan(y_true)
    if keep.sum() < 2 or scored_rows.sum() < 2:
        return None
    train, test = train.loc[keep], test.loc[scored_rows]
    kinds, orders = roles.kinds(), roles.orders()
    if roles.class_column in features:  # the class is a label: read as a category
        kinds = {**kinds, roles.class_column: ColumnKind.nominal}
    if features:
        encoder = TableEncoder(columns=features, kinds={c: kinds[c] for c in features}, orders=orders).fit(train)
        x_train, x_test = encoder.transform(train), encoder.transform(test)
    else:  # nothing to predict from: the regressor learns the training mean
        x_train, x_test = np.zeros((len(train), 1)), np.zeros((len(test), 1))
    model = HistGradientBoostingRegressor(early_stopping=True, random_state=seed % (2**32))
    _fit(model, x_train, y_train[keep])
    return float(r2_score(y_true[scored_rows], model.predict(x_test)))


def regression_scores(train_original: pd.DataFrame, released: pd.DataFrame, test: pd.DataFrame, roles: Roles,
                      spec: UtilitySpec, seed: int = 0, released_view: tuple[pd.DataFrame, Roles] | None = None
                      ) -> list[RegressionScore]:
    """R^2 per column of ``spec.regression`` (:func:`regression_r2`) on the held-out real rows: trained on the
    release and, for the baseline, on the original training rows. ``released_view``: (the held-out rows as the
    release publishes them, aligned with ``test``; the roles the release is read with) for a recoding (see
    :func:`evaluate_utility`); None when it does not stand for each held-out row in ``test``'s order."""
    out = []
    for column in spec.regression:
        r2_0 = regression_r2(train_original, test, test[column], column, roles, seed) \
            if column in test.columns else None
        if released_view is None:
            r2 = regression_r2(released, test, test[column], column, roles, seed) if column in test.columns else None
        else:
            view_test, view_roles = released_view
            r2 = regression_r2(released, view_test, test[column], column, view_roles, seed) \
                if column in test.columns and len(view_test) == len(test) else None
        scored_rows = int(pd.to_numeric(test[column], errors="coerce").notna().sum()) if column in test.columns else 0
        out.append(RegressionScore(column=column, r2=r2, r2_original=r2_0, test_rows=scored_rows))
    return out


def check_regression_targets(spec: UtilitySpec, roles: Roles) -> None:
    """Each ``utility.regression`` column is an input column tagged as a numeric attribute; raises
    :class:`SpecError` naming the key and the column (once the input is tagged)."""
    for name in spec.regression:
        try:
            tag = roles.get(name)
        except KeyError:
            raise SpecError(f"spec utility.regression: column '{name}' is not an input column") from None
        if name not in roles.attributes:
            raise SpecError(f"spec utility.regression: column '{name}' is not a published attribute (it is "
                            f"{'dropped' if tag.treatment == 'dropped' else tag.role.value}): a regression target is "
                            "a numeric attribute")
        if tag.kind is not ColumnKind.numeric:
            raise SpecError(f"spec utility.regression: column '{name}' is {tag.kind.value}, not numeric: a regression "
                            "target is a numeric attribute")


def scored(pred: np.ndarray, y_test: np.ndarray) -> tuple[float, dict[str, float], dict[str, int]]:
    """(accuracy, recall per class, support per class) of predictions against the held-out labels."""
    hit = pred == y_test
    labels, inverse = np.unique(y_test, return_inverse=True)
    per_hits = np.bincount(inverse, weights=hit.astype(float), minlength=len(labels))
    support = np.bincount(inverse, minlength=len(labels))
    per_class = {str(lab): float(h / s) for lab, h, s in zip(labels, per_hits, support)}
    return float(hit.mean()) if len(hit) else 0.0, per_class, {str(lab): int(s) for lab, s in zip(labels, support)}


def information_loss(original: np.ndarray, released: np.ndarray) -> tuple[float, float]:
    """(mean shift, correlation loss) between two encoded, standardized matrices of the same columns."""
    if original.shape[1] == 0 or len(original) == 0 or len(released) == 0:
        return 0.0, 0.0
    shift = float(np.mean(np.abs(released.mean(axis=0) - original.mean(axis=0))))
    if original.shape[1] < 2:
        return shift, 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.corrcoef(original, rowvar=False)
        b = np.corrcoef(released, rowvar=False)
    iu = np.triu_indices(original.shape[1], 1)
    a, b = np.nan_to_num(a[iu]), np.nan_to_num(b[iu])
    return shift, float(np.mean(np.abs(a - b)))


_INTERVAL = re.compile(r"^\s*[\[(]\s*(-?[0-9.eE+]+)\s*[-,;]\s*(-?[0-9.eE+]+)\s*[\])]\s*$")


def label_midpoint(label: object) -> float:
    if label is None or (isinstance(label, float) and np.isnan(label)):
        return np.nan
    if isinstance(label, (int, float, np.integer, np.floating)):
        return float(label)
    text = str(label)
    match = _INTERVAL.match(text)
    if match:
        return (float(match.group(1)) + float(match.group(2))) / 2.0
    try:
        return float(text)
    except ValueError:
        return np.nan  # "*" and any label that is not a number or an interval: missing


def decode_generalized(frame: pd.DataFrame, roles: Roles) -> tuple[pd.DataFrame, Roles]:
    """Generalized values as the utility step's classifiers read them: a numeric attribute's interval labels by
    their midpoint ("[40-50)" -> 45, "[23-31]" -> 27), a plain number as itself, "*" (suppressed or fully
    generalized) and any other label as missing (imputed by the encoder); every other attribute's labels
    (categories, prefixes such as "130**", hierarchy nodes) as nominal categories."""
    out = frame.copy()
    tags = []
    for tag in roles.columns:
        if tag.name in out.columns and tag.role is not Role.class_ and tag.name in roles.attributes:
            series = out[tag.name]
            if tag.kind is ColumnKind.numeric and not (pd.api.types.is_numeric_dtype(series)
                                                       or pd.api.types.is_datetime64_any_dtype(series)):
                out[tag.name] = np.array([label_midpoint(v) for v in series.to_numpy(dtype=object)], dtype=float)
            elif tag.kind is not ColumnKind.numeric:
                out[tag.name] = series.astype(object).where(series.notna(), None)
                tag = tag.model_copy(update={"kind": ColumnKind.nominal, "order": None})
        tags.append(tag)
    return out, roles.model_copy(update={"columns": tags})


def split_release(release, frame: pd.DataFrame, class_column: str, fraction: float, seed: int
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A release that stands for every row of ``frame`` (a method of the every-row shape,
    :data:`ppdp.tasks.shapes.EVERY_ROW`), split as :func:`split_holdout` splits ``frame``: (published rows of the
    training split, published rows of the held-out split), by ``row_source``."""
    _, test_positions = holdout_positions(frame, class_column, fraction, seed)
    source = np.asarray(release.row_source)
    held = np.isin(source, test_positions)
    frame = release.frame
    published_test = frame.loc[held].reset_index(drop=True)
    # the held-out rows in the order of split_holdout's (each stands for its input row: what a regression target's
    # real values are aligned with); the classifiers score each row alone, so the order changes no accuracy
    rank = pd.Series(np.arange(len(test_positions)), index=test_positions).reindex(source[held]).to_numpy()
    published_test = published_test.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)
    return frame.loc[~held].reset_index(drop=True), published_test


def release_information_loss(original: pd.DataFrame, released: pd.DataFrame, roles: Roles, generalized: bool
                             ) -> tuple[float, float]:
    """(mean shift, correlation loss) of ``released`` against ``original`` as :func:`evaluate_utility` measures
    them: every attribute encoded and standardized on ``original``, or, for a ``generalized`` release (every row
    recoded), its numeric attributes only, interval labels read as their midpoint."""
    if not generalized:
        encoder = feature_encoder(original, roles)
        return information_loss(encoder.transform(original), encoder.transform(released))
    numeric = [c for c in roles.attributes if roles.get(c).kind is ColumnKind.numeric]
    if not numeric:
        return 0.0, 0.0
    decoded, _ = decode_generalized(released, roles)
    encoder = feature_encoder(original, roles.model_copy(update={"columns": [roles.get(c) for c in numeric]}))
    return information_loss(encoder.transform(original), encoder.transform(decoded))


def evaluate_utility(train_original: pd.DataFrame, released: pd.DataFrame, test: pd.DataFrame, roles: Roles,
                     spec: UtilitySpec, seed: int = 0, test_released: pd.DataFrame | None = None) -> UtilityReport:
    """Accuracy of the release vs the original training rows on the held-out rows, information loss, gate.

    ``test_released``: the held-out rows as the release publishes them (a generalization publishes every row:
    ``released`` is then its rows of the training split, see :func:`split_release`); the classifier trained on
    ``released`` is tested on them, both read through :func:`decode_generalized` with an encoder fitted on the
    release (an analyst holds only the release), while the baseline trains on the original training rows and
    tests on the original held-out rows."""
    encoder = feature_encoder(train_original, roles)
    acc0, per_class0, _ = original_accuracy(train_original, test, roles, spec.classifier, encoder, seed)
    if test_released is None:
        acc, per_class, support = accuracy(released, test, roles, spec.classifier, encoder, seed)
        shift, corr = information_loss(encoder.transform(train_original), encoder.transform(released))
        rel_train, rel_test, rel_roles, rel_encoder = released, test, roles, encoder
    else:
        rel_train, rel_roles = decode_generalized(released, roles)
        rel_test, _ = decode_generalized(test_released, roles)
        rel_encoder = feature_encoder(rel_train, rel_roles)
        acc, per_class, support = accuracy(rel_train, rel_test, rel_roles, spec.classifier, rel_encoder, seed)
        numeric = [c for c in roles.attributes if roles.get(c).kind is ColumnKind.numeric]
        num_roles = roles.model_copy(update={"columns": [roles.get(c) for c in numeric]})
        shift, corr = information_loss(feature_encoder(train_original, num_roles).transform(train_original),
                                       feature_encoder(train_original, num_roles).transform(rel_train)) \
            if numeric else (0.0, 0.0)
    ratio = acc / acc0 if acc0 > 0 else None
    known: dict[str, tuple[float, float]] = {spec.classifier: (acc, acc0)}
    delta = delta_r(train_original, rel_train, test, roles, spec, encoder, seed, known=known,
                    released_view=(rel_test, rel_roles, rel_encoder)) if spec.delta_r is not None else []
    known.update({d.classifier: (d.accuracy, d.accuracy_original) for d in delta})
    tstr = tstr_scores(train_original, rel_train, test, roles, spec, encoder, seed, known=known,
                       released_view=(rel_test, rel_roles, rel_encoder))
    regression = regression_scores(train_original, rel_train, test, roles, spec, seed,
                                   None if test_released is None else (rel_test, rel_roles))
    gates = utility_gates(spec, delta, ratio, per_class, per_class0)
    return UtilityReport(
        classifier=spec.classifier,
        train_rows=len(rel_train),
        test_rows=len(test),
        accuracy=acc,
        accuracy_original=acc0,
        ratio=ratio,
        per_class=[
            ClassAccuracy(label=lab, support=support[lab], sanitized=per_class[lab], original=per_class0[lab])
            for lab in per_class
        ],
        mean_shift=shift,
        correlation_loss=corr,
        delta_r=delta,
        tstr=tstr,
        regression=regression,
        delta_r_epsilon=spec.delta_r.epsilon if spec.delta_r is not None else None,
        gates=gates,
    )


def utility_gates(spec: UtilitySpec, delta: list[DeltaR], ratio: float | None, per_class: dict[str, float],
                  per_class0: dict[str, float]) -> list[GateResult]:
    """The utility gates the spec sets: paper 004's delta R (worst classifier) and the accuracy ratio."""
    gates = []
    if spec.delta_r is not None:
        worst = min(delta, key=lambda d: d.value)
        gates.append(GateResult(
            name="delta_r", measure=f"paper 004's R_p - (1 - {spec.delta_r.epsilon:g}) R_o, worst classifier",
            threshold=0.0, value=worst.value, passed=all(d.value >= 0 for d in delta), worst=worst.classifier))
    if spec.min_accuracy_ratio is not None:
        gates.append(GateResult(name="min_accuracy_ratio", threshold=spec.min_accuracy_ratio, value=ratio,
                                passed=ratio is not None and ratio >= spec.min_accuracy_ratio,
                                worst=_worst_class(per_class, per_class0)))
    return gates


def delta_r(train_original: pd.DataFrame, released: pd.DataFrame, test: pd.DataFrame, roles: Roles,
            spec: UtilitySpec, encoder: TableEncoder, seed: int = 0,
            known: dict[str, tuple[float, float]] | None = None,
            released_view: tuple[pd.DataFrame, Roles, TableEncoder] | None = None) -> list[DeltaR]:
    """Paper 004's criterion ΔR = R_p - (1 - epsilon) R_o for each classifier of ``spec.delta_r`` (section 3.1):
    R_p trained on the release, R_o on the original training rows, both tested on the held-out rows.
    ``known`` holds (R_p, R_o) already measured for a classifier; ``released_view`` (held-out rows, roles,
    encoder) is how the release is read when it is generalized (see :func:`evaluate_utility`)."""
    assert spec.delta_r is not None
    keep = 1.0 - spec.delta_r.epsilon
    view_test, view_roles, view_encoder = released_view or (test, roles, encoder)
    out = []
    for name in dict.fromkeys(spec.delta_r.classifiers):
        if known and name in known:
            r_p, r_o = known[name]
        else:
            r_p = accuracy(released, view_test, view_roles, name, view_encoder, seed)[0]
            r_o = original_accuracy(train_original, test, roles, name, encoder, seed)[0]
        out.append(DeltaR(classifier=name, accuracy=r_p, accuracy_original=r_o, value=r_p - keep * r_o))
    return out


def name_classes(report: UtilityReport, release, class_column: str | None, k: int) -> UtilityReport:
    """``report`` with every class label that the published data holds fewer than ``k`` times (or not at all: a
    label only held-out rows carry) replaced by ``class #i``, its position among the sorted labels: labels reach
    the manifest, the report, the CLI summary and Prefect's artifacts."""
    # every part of a partitioned release holds every record's class
    frame = release.parts[0].frame if isinstance(release, PartsRelease) and release.parts else release.frame
    counts = (frame[class_column].dropna().astype(str).value_counts().to_dict()
              if class_column is not None and class_column in frame.columns else {})
    return name_counted_classes(report, {str(c): int(n) for c, n in counts.items()}, k)


def name_counted_classes(report: UtilityReport, counts: dict[str, int], k: int) -> UtilityReport:
    """:func:`name_classes` from the published rows per class label (as text)."""
    order = sorted(c.label for c in report.per_class)
    named = [c if counts.get(c.label, 0) >= k else c.model_copy(update={"label": f"class #{order.index(c.label)}"})
             for c in report.per_class]
    return report.model_copy(update={"per_class": named})


def _worst_class(per_class: dict[str, float], baseline: dict[str, float]) -> str | None:
    """The class losing most accuracy, by its position among the sorted labels (gate messages reach the audit
    trail and Prefect's database: no label text there; the manifest's per-class report has the labels)."""
    if not per_class:
        return None
    labels = sorted(per_class)
    i = min(range(len(labels)), key=lambda j: per_class[labels[j]] - baseline.get(labels[j], 0.0))
    label = labels[i]
    return f"class #{i} of {len(labels)}: {per_class[label]:.3f} vs {baseline.get(label, 0.0):.3f} on original rows"


# -- partitioned releases (DMPD, paper 001) ---------------------------------------------------------------------
_PROBABILITY_FLOOR = 1e-3  # a classifier's probability of a class is never taken below this (hard votes included)


def _part_model(part: pd.DataFrame, class_column: str, classifier: str, seed: int):
    """``classifier`` trained on one published part, every feature read as a nominal category (the parts publish
    intervals and categories); returns (encoder, model)."""
    from sklearn.exceptions import ConvergenceWarning  # heavy: scikit-learn

    columns = [c for c in part.columns if c != class_column]
    view = part[columns].astype(object).where(part[columns].notna(), None)
    encoder = TableEncoder(columns=columns, kinds={c: ColumnKind.nominal for c in columns}).fit(view)
    model = make_classifier(classifier, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _fit(model, encoder.transform(view), part[class_column].astype(str).to_numpy())
    return encoder, model


def parts_accuracy(parts: dict[str, pd.DataFrame], test_parts: dict[str, pd.DataFrame], test_labels: np.ndarray,
                   class_column: str, classifier: str, seed: int = 0
                   ) -> tuple[float, dict[str, float], dict[str, int]]:
    """Accuracy of one ``classifier`` per published part, combined as paper 001's Procedure 3 combines its
    inducers: ``argmax_c sum_k log P_k(c | x_Gk) - (w - 1) log P(c)``, P(c) the class shares of the release.
    A classifier without probabilities (a linear SVM) votes 1 for its prediction; every probability is floored at
    :data:`_PROBABILITY_FLOOR` so that one part cannot veto a class."""
    names = list(parts)
    first = parts[names[0]][class_column].astype(str)
    labels = np.array(sorted(first.unique()))
    prior = first.value_counts().reindex(labels).to_numpy(dtype=float) / len(first)
    score = np.zeros((len(test_labels), len(labels)))
    for name in names:
        encoder, model = _part_model(parts[name], class_column, classifier, seed)
        columns = [c for c in parts[name].columns if c != class_column]
        rows = test_parts[name][columns]
        x = encoder.transform(rows.astype(object).where(rows.notna(), None))
        proba = np.zeros((len(rows), len(labels)))
        at = np.searchsorted(labels, model.classes_.astype(str))
        if hasattr(model, "predict_proba"):
            proba[:, at] = model.predict_proba(x)
        else:
            proba[np.arange(len(rows)), np.searchsorted(labels, model.predict(x).astype(str))] = 1.0
        score += np.log(np.maximum(proba, _PROBABILITY_FLOOR))
    score -= (len(names) - 1) * np.log(prior)
    return scored(labels[np.argmax(score, axis=1)], test_labels)


def evaluate_parts_utility(train_original: pd.DataFrame, release, test: pd.DataFrame, roles: Roles,
                           spec: UtilitySpec, seed: int = 0) -> UtilityReport:
    """The utility step for a partitioned release: the spec's classifier trained on each published part and
    combined (:func:`parts_accuracy`), tested on the held-out original rows recoded as the parts publish them
    (``release.recode``); the baseline is the same classifier on the original training rows. Information loss
    is measured per part on its numeric columns (interval midpoints against the original values; open-ended
    intervals read as missing) and averaged over the parts weighted by columns."""
    cls = roles.class_column
    assert cls is not None
    encoder = feature_encoder(train_original, roles)
    acc0, per_class0, _ = original_accuracy(train_original, test, roles, spec.classifier, encoder, seed)
    parts = {p.name: p.frame for p in release.parts}
    test_parts = release.recode(test)
    y_test = test[cls].astype(str).to_numpy()
    acc, per_class, support = parts_accuracy(parts, test_parts, y_test, cls, spec.classifier, seed)
    shifts, corrs, weights = [], [], []
    for frame in parts.values():
        numeric = [c for c in frame.columns if c != cls and c in roles.attributes
                   and roles.get(c).kind is ColumnKind.numeric]
        if not numeric:
            continue
        decoded, _ = decode_generalized(frame, roles)
        num_roles = roles.model_copy(update={"columns": [roles.get(c) for c in numeric]})
        enc = feature_encoder(train_original, num_roles)
        shift, corr = information_loss(enc.transform(train_original), enc.transform(decoded))
        shifts.append(shift)
        corrs.append(corr)
        weights.append(len(numeric))
    shift = float(np.average(shifts, weights=weights)) if weights else 0.0
    corr = float(np.average(corrs, weights=weights)) if weights else 0.0
    ratio = acc / acc0 if acc0 > 0 else None
    delta = []
    if spec.delta_r is not None:
        keep = 1.0 - spec.delta_r.epsilon
        for name in dict.fromkeys(spec.delta_r.classifiers):
            r_p = acc if name == spec.classifier else parts_accuracy(parts, test_parts, y_test, cls, name, seed)[0]
            r_o = acc0 if name == spec.classifier else original_accuracy(train_original, test, roles, name, encoder,
                                                                         seed)[0]
            delta.append(DeltaR(classifier=name, accuracy=r_p, accuracy_original=r_o, value=r_p - keep * r_o))
    known = {spec.classifier: (acc, acc0), **{d.classifier: (d.accuracy, d.accuracy_original) for d in delta}}
    tstr = [TstrScore(classifier=name, accuracy=known[name][0], accuracy_original=known[name][1]) if name in known
            else TstrScore(classifier=name, accuracy=parts_accuracy(parts, test_parts, y_test, cls, name, seed)[0],
                           accuracy_original=original_accuracy(train_original, test, roles, name, encoder, seed)[0])
            for name in dict.fromkeys(spec.tstr)]
    # a regression target is read from one table by the other attributes: the parts split them (not measured)
    regression = [RegressionScore(column=c, r2=None, test_rows=len(test),
                                  r2_original=regression_r2(train_original, test, test[c], c, roles, seed)
                                  if c in test.columns else None) for c in spec.regression]
    return UtilityReport(
        classifier=spec.classifier, train_rows=len(next(iter(parts.values()))), test_rows=len(test), accuracy=acc,
        accuracy_original=acc0, ratio=ratio,
        per_class=[ClassAccuracy(label=lab, support=support[lab], sanitized=per_class[lab], original=per_class0[lab])
                   for lab in per_class],
        mean_shift=shift, correlation_loss=corr, delta_r=delta, tstr=tstr, regression=regression,
        delta_r_epsilon=spec.delta_r.epsilon if spec.delta_r is not None else None,
        gates=utility_gates(spec, delta, ratio, per_class, per_class0))
