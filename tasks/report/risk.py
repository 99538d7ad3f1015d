"""The page's risk section: the attacker's view, the safety floor, then the privacy unit's own figures (class or
group sizes, ARX's risks, pyCANON's models, distances, distortion, paper 002's attacker)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ppdp.schemas.manifest import is_withheld
from ppdp.schemas.reports import AttackerView, PrivacyReport
from ppdp.schemas.units import unit_of
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.privacy.attacker import known_text
from ppdp.tasks.report.charts import histogram_svg
from ppdp.tasks.report.context import Context
from ppdp.tasks.report.fmt import claim_text, esc, fmt, pct_text, plural, share
from ppdp.tasks.report.markup import COMPARISON, badge_html, html_cards, html_dl, html_table
from ppdp.tasks.report.wording import (
    PRE_FLOOR,
    RECHECK_TEXT,
    data_files_text,
    floor_rule,
    floor_source_kind,
    floor_verdict,
    worst_part_text,
)

_RISK_TEXT = (
    ("prosecutor_max", "prosecutor risk, highest", "1/|class| of the most exposed record (the attacker knows the "
                                                   "person is in the table)"),
    ("prosecutor_average", "prosecutor risk, average", "1/|class| averaged over the records"),
    ("records_at_risk", "records at risk", "share of records whose prosecutor risk exceeds the risk threshold"),
    ("journalist_max", "journalist risk, highest", "1/|population class| (the attacker does not know who is in "
                                                   "the table)"),
    ("journalist_average", "journalist risk, average", "averaged over the records"),
    ("marketer", "marketer risk", "expected share of records re-identified when every record is attacked"),
    ("sample_uniques", "sample uniques", "share of records alone in their class"),
)

_PERTURBATION_TEXT = (
    ("vd", "value difference (VD)", "||A - A'|| / ||A|| over the numeric attributes; larger: more distortion"),
    ("rp", "rank position change (RP)", "mean change of a value's rank; larger: more privacy"),
    ("rk", "rank kept (RK)", "share of values keeping their rank; smaller: more privacy"),
    ("cp", "correlation position change (CP)", "mean change of an attribute's correlation rank; larger: more "
                                               "privacy"),
    ("ck", "correlation rank kept (CK)", "share of attributes keeping their correlation rank; smaller: more "
                                         "privacy"),
)


def risk(page: Context) -> str:
    m = page.m
    unit_name = unit_of(m.unit).plural
    return "".join([
        '<h3 class="block">What an attacker sees</h3>', _attacker(page),
        '<h3 class="block">The safety floor</h3>', _floor(page),
        f'<h3 class="block">The privacy unit\'s own figures ({esc(unit_name)})</h3>',
        f'<p class="note">Measured over the method\'s privacy unit, {esc(unit_name)}, as the policy\'s claims are '
        "(section 2). They say what the method guarantees by construction; the attacker's view above says what "
        "the published table shows.</p>",
        _unit_figures(page)])


def _attacker(page: Context) -> str:
    """The attacker's view: identity figures on the known columns, groups, copies and linkage, attribute
    disclosure against its baseline, and each part's view of a partitioned release."""
    m = page.m
    view = m.privacy.attacker_view
    if view is None:
        return (f'<p class="muted">This release was {esc(PRE_FLOOR)}: its manifest holds no attacker\'s view (the '
                "release as an attacker holding the table sees it). The privacy unit's own figures follow.</p>")
    known = view.quasi_identifiers + view.counted_columns
    parts = ['<p class="note">Measured the same way for every method, on the published table as an attacker '
             "holding it sees it: records are grouped by the columns the attacker can match on, the "
             "quasi-identifiers as published (labels, intervals, numbers)"
             + (", and the published columns beside them that split those groups (counted in)"
                if view.counted_columns else "")
             + (f". {esc(worst_part_text(m))} Every table is listed below.</p>" if m.parts else ".</p>")]
    parts.append(html_dl(_attacker_facts(view)))
    # the quasi-identifiers and the counted columns split the rows into the same classes as every known column
    every = view.known_columns or known
    on = f"on the {len(every)} known column{'s' if len(every) != 1 else ''}"
    parts.append(html_cards(_attacker_cards(view, on)))
    parts.append(html_table(("figure", "value", "meaning"), [tuple(esc(c) for c in r) for r in
                                                             _attacker_rows(page, on)], num=(1,)))
    if view.identity_by == "groups":
        parts.append('<p class="note">The rows are synthesized: a row alone on the known columns leads an attacker '
                     "to its generating group, which stands for none of its records; the group figures are the "
                     "ones the safety floor holds this release to.</p>")
    parts.append(_disclosure(view))
    if m.parts:
        parts.append(_each_part_view(page))
    if view.uninformative_columns:
        parts.append(f'<p class="note"><span class="badge t-none">no information</span> '
                     f"{', '.join(f'<code>{esc(c)}</code>' for c in view.uninformative_columns)}: '*' (or "
                     "missing) in every published row.</p>")
    return "".join(parts)


def _attacker_facts(view: AttackerView) -> list[tuple[str, str]]:
    """What hides identities, what is protected, and the columns the attacker's figures are measured on."""
    facts = [("identities hidden by", esc({"classes": "equivalence classes", "groups": "generating groups",
                                           "records": "perturbing or generating each record",
                                           "differential_privacy": "a differentially private mechanism (every "
                                                                   "row generated)",
                                           "none": "nothing: the quasi-identifiers are published unchanged"}[
                                               view.identity_by])),
             ("protects", esc({"identity": "who is in which row", "attribute": "the protected values"}[
                 view.protects])),
             ("quasi-identifiers as published", ", ".join(f"<code>{esc(c)}</code>" for c in view.quasi_identifiers)
              or '<span class="muted">none</span>')]
    if view.counted_columns:
        facts.append(("counted in beside them", ", ".join(f"<code>{esc(c)}</code>" for c in view.counted_columns)
                      + ' <span class="note">(published beside the quasi-identifiers, they split the classes an '
                      "attacker sees)</span>"))
    beside = view.known_columns[len(view.quasi_identifiers):]
    if view.exact_copies is not None or view.linkage_risk is not None or view.nearest_distance:
        facts.append(("copies, linkage and distances measured over",
                      esc(known_text(view)) + (": " + ", ".join(f"<code>{esc(c)}</code>" for c in beside)
                                              + " beside the quasi-identifiers" if beside else "")))
    return facts


def _attacker_cards(view: AttackerView, on: str) -> list[tuple[str, str, str]]:
    """The attacker's key figures as cards: records alone, classes (groups first when they hide identities),
    copies and linkage."""
    cards = [("records alone", esc(share(view.records_alone)), esc(on)),
             ("smallest class", esc(fmt(view.smallest_class)), f"of {esc(fmt(view.classes))} classes"),
             ("average risk", esc(fmt(view.average_risk, 3)), "mean 1/|class|"),
             ("highest risk", esc(fmt(view.highest_risk, 3)), "largest 1/|class|")]
    if view.groups is not None:
        group_cards = [("smallest group", esc(fmt(view.smallest_group)), f"of {esc(fmt(view.groups))} groups"),
                       ("average risk, groups", esc(fmt(view.group_average_risk, 3)), "mean 1/|group|")]
        # a generating-group release hides identities by its groups: their figures first
        cards = group_cards + cards[:1] if view.identity_by == "groups" else cards + group_cards[1:]
    if view.exact_copies is not None:
        cards.append(("exact copies", esc(share(view.exact_copies)), "published rows equal to an input record on "
                      "the known columns"))
    if view.linkage_risk is not None:
        cards.append(("linkage risk", esc(fmt(view.linkage_risk, 3)), "input records whose nearest published row, "
                      "over the known columns, is their own"))
    return cards


def _attacker_rows(page: Context, on: str) -> list[tuple[str, str, str]]:
    """The attacker's figures as rows (figure, value, meaning; not yet escaped)."""
    m = page.m
    view = m.privacy.attacker_view
    assert view is not None  # the caller returned early without one
    rows = [("classes", fmt(view.classes), f"distinct combinations of the known columns among the "
             f"{fmt(view.records)} published records"),
            ("smallest class", fmt(view.smallest_class), "rows sharing the rarest combination"),
            ("records alone", share(view.records_alone), f"share of published records alone {on}"),
            ("average re-identification risk", fmt(view.average_risk), "mean over published records of "
             "1/|class| on the known columns"),
            ("highest re-identification risk", fmt(view.highest_risk), "largest 1/|class|")]
    if view.groups is not None:
        rows += [("generating groups", fmt(view.groups), "groups in the published group column"),
                 ("smallest group", fmt(view.smallest_group), "published rows of the smallest group"),
                 ("rows alone in their group", share(view.group_alone), "share of published rows that are the "
                  "only row of their group"),
                 ("average risk over groups", fmt(view.group_average_risk), "mean over published rows of "
                  "1/|group|")]
    withheld = is_withheld(m, "privacy.attacker_view.exact_copies")
    rows.append(("exact copies", share(view.exact_copies) if view.exact_copies is not None else
                 "withheld (measured against the input)" if withheld else "not measured",
                 f"share of published rows equal to an input record on every one of {known_text(view)} "
                 "(pseudonyms aside)"))
    if view.linkage_risk is not None:
        rows.append(("linkage risk", fmt(view.linkage_risk), "share of input records an attacker who knows their "
                     f"values on {known_text(view)} links to their own row by taking the nearest published row"))
    for key, value in view.nearest_distance.items():
        q = re.fullmatch(r"q(\d+)", key)
        rows.append((f"nearest distance, {int(q.group(1))}% quantile" if q else f"nearest distance {key}",
                     fmt(value), "distance from an input record to its nearest published record over "
                     f"{known_text(view)}"))
    return rows


def _disclosure(view: AttackerView) -> str:
    """Attribute disclosure per protected column against its baseline ("" when nothing is protected)."""
    if view.disclosure:
        return "".join([
            "<h4>Attribute disclosure</h4>",
            '<p class="note">For each protected column: the share of published records whose value an '
            "attacker holding their known columns learns (the most common value among the rows sharing "
            "them; for numbers, within the tolerance), against the best constant guess without the "
            "release (the baseline). The gain is the difference, in points.</p>",
            html_table(
                ("column", "kind", "tolerance", "records", "learned", "baseline", "gain", "re-check from"),
                [(f"<code>{esc(d.column)}</code>", esc(d.kind), esc(f"±{fmt(d.tolerance, 3)}") if d.tolerance
                  is not None else "exact", esc(fmt(d.records)), esc(share(d.disclosure)), esc(share(d.baseline)),
                  esc(f"{100 * d.gain:+.1f} points"),
                  "published table" if d.recheck == "published" else "needs the original input")
                 for d in view.disclosure], num=(2, 3, 4, 5, 6), nowrap=(7,))])
    if view.protects == "attribute":
        return '<p class="muted">No protected column could be measured for attribute disclosure.</p>'
    return ""


def _each_part_view(page: Context) -> str:
    """A partitioned release: each published table's attacker figures and its safety floor."""
    rows = []
    for part in page.m.parts:
        v, f = part.privacy.attacker_view, part.privacy.floor
        if v is None:
            rows.append((f"<code>{esc(part.name)}</code>", '<span class="muted">not measured</span>', "", "",
                         "", "", badge_html(None)))
            continue
        cols = ", ".join(f"<code>{esc(c)}</code>" for c in v.quasi_identifiers + v.counted_columns)
        rows.append((f"<code>{esc(part.name)}</code>", cols or '<span class="muted">none</span>',
                     esc(fmt(v.classes)), esc(fmt(v.smallest_class)), esc(share(v.records_alone)),
                     esc(fmt(v.average_risk, 3)),
                     badge_html(f.holds if f is not None else None, "holds", "below")))
    return "<h4>Each published table</h4>" + html_table(
        ("table", "known columns", "classes", "smallest class", "records alone", "average risk", "safety floor"),
        rows, num=(2, 3, 4, 5), nowrap=(0, 6))


def _floor(page: Context) -> str:
    """The safety floor: each applicable row with its figure, limit, value, verdict and where the limit comes
    from."""
    m = page.m
    floor = m.privacy.floor
    if floor is None:
        return (f'<p class="muted">This release was {esc(PRE_FLOOR)}: its manifest records no safety floor. '
                "Releases made since are held to it whatever their policy says.</p>")
    applies = {"classes": "equivalence classes", "groups": "generating groups", "records": "record by record",
               "differential_privacy": "differential privacy", "attribute": "a protected attribute"}
    parts = ['<p>Under every policy lies the safety floor: limits no spec can lower, on the attacker\'s view '
             "above. The rows that apply follow from what the method protects and how it hides identities "
             f"(here: {esc(', '.join(applies.get(a, a) for a in floor.applies) or 'none')}). A release below it "
             "is published only when its owner records a reason (<code>privacy.accept_below_floor</code>).</p>"]
    rows = []
    for c in floor.claims:
        rule = floor_rule(c)
        kind = floor_source_kind(rule)
        badge = "src-std" if kind == "cited standard" else "src-own"
        text = rule.source.removeprefix("ppdp's choice: ") if rule is not None else ""
        source = f'<span class="badge {badge}">{esc(kind)}</span> {esc(text)}'
        figure = esc(c.measure) + (f'<br><span class="note">{esc(c.worst)}</span>' if c.worst else "")
        value, limit = claim_text(c)
        rows.append((f"<code>{esc(c.name.removeprefix('floor: '))}</code>", figure, esc(value),
                     f"{COMPARISON.get(c.comparison, esc(c.comparison))} {esc(limit)}",
                     badge_html(c.passed), RECHECK_TEXT.get(c.recheck, c.recheck), source))
    if rows:
        parts.append(html_table(("floor row", "figure", "value", "limit", "verdict", "re-check from", "source"), rows,
                            num=(2,), nowrap=(0, 3, 4)))
        parts.append('<p class="note">Source: <span class="badge src-std">cited standard</span> a limit taken '
                     'from a published standard; <span class="badge src-own">ppdp\'s choice</span> a limit ppdp '
                     "sets itself, with its reason.</p>")
    else:
        parts.append('<p class="muted">No floor row applies to this release.</p>')
    failed = [c for c in floor.claims if not c.passed]
    if floor.accepted is not None:
        a = floor.accepted
        parts.append(f'<div class="verdict bad">Published below the safety floor on purpose: {esc(a.reason)} '
                     f"(approved by {esc(a.approved_by)}); {len(failed)} of {len(floor.claims)} floor rows "
                     "fail.</div>")
    elif floor_verdict(m) is False:
        parts.append(f'<div class="verdict bad">Below the safety floor: {len(failed)} of {len(floor.claims)} '
                     "floor rows fail" + (", or a table's own floor fails" if m.parts else "") + ".</div>")
    elif floor.claims:
        parts.append(f'<div class="verdict ok">The release meets the safety floor ({len(floor.claims)} of '
                     f"{len(floor.claims)} rows hold).</div>")
    return "".join(parts)


def _dp_figures(page: Context) -> str:
    """A differentially private release's guarantee as its mechanism was built (names and counts only)."""
    d = page.m.privacy.dp
    if d is None:
        return '<p class="muted">The manifest records no differentially private mechanism.</p>'
    rows = [("library", esc(d.library), "the DP library that built the mechanism"),
            ("mechanism", esc(d.mechanism), ("AIM: noisy one-way counts, then round by round a noisy-max choice of "
                                            "the marginal of up to 3 columns the model fits worst, its noisy count "
                                            "and the model refitted" if d.mechanism == "aim" else
                                            "MST: noisy one-way counts, noisy-max choice of column pairs, noisy "
                                            "two-way counts, a graphical model fitted to them")
             + (f" ({esc(d.mechanism_choice)})" if d.mechanism_choice else "")),
            ("definition", esc(d.definition), "pure: epsilon-DP (every category public); approximate: "
                                              "(epsilon, delta)-DP"),
            ("neighbouring inputs", esc(d.neighbours), "what the guarantee protects"),
            ("epsilon asked / spent", esc(f"{fmt(d.epsilon)} / {fmt(d.epsilon_spent)}"),
             "spent: the library's privacy map of the mechanism as built (with DP bins: the quantiles' and the "
             "synthesizer's maps added)"),
            ("delta asked / spent", esc(f"{fmt(d.delta)} / {fmt(d.delta_spent)}"), "spent on discovering "
                                                                                    "categories privately"),
            ("public bins", esc(", ".join(c for c in d.binned if c not in d.found_edges) or "none"),
             "numbers cut at the spec's public edges"),
            ("bins found under DP", esc(", ".join(d.found_edges) or "none"),
             "inner edges: DP quantiles within public bounds (the manifest's found_edges), spending "
             + esc(fmt(d.bins_epsilon_spent)) + " of the epsilon spent" if d.found_edges else "none"),
            ("public categories", esc(", ".join(d.public_categories) or "none"), "listed in the spec"),
            ("discovered categories", esc(", ".join(d.discovered) or "none"),
             "kept only with a noisy count above " + esc(fmt(d.discovery_threshold))
             if d.discovery_threshold is not None else "none discovered"),
            ("rows", esc(d.rows), "the published row count")]
    return ("<p>This release's privacy unit is <b>differential privacy</b>: every row is generated, so there are "
            "no classes or groups to count; its claim is the mechanism's (epsilon, delta), which holds by "
            "construction.</p>" + html_table(("figure", "value", "meaning"), rows, num=()))


def _unit_figures(page: Context) -> str:
    """The privacy unit's own figures: class or group sizes, ARX's risks, pyCANON's models, distances,
    distortion, paper 002's attacker."""
    m, p = page.m, page.m.privacy
    threshold = next((c.threshold for c in p.claims if c.name == "k"), None)
    if threshold is None and m.spec.privacy.k is not None:
        threshold = float(m.spec.privacy.k)
    parts = [_unit_sizes(page, threshold)]
    for figures in (_reidentification, _anonymity_models, _distance_and_linkage, _distortion, _random_queries):
        parts += figures(p)
    if not parts:
        parts.append('<p class="muted">The manifest holds no figure of the privacy unit.</p>')
    return "".join(parts)


def _unit_sizes(page: Context, threshold: float | None) -> str:
    """What the unit's sizes are: records compared one by one, a DP mechanism's figures, a distributed release's
    classes, or the published classes or groups with their histogram."""
    m = page.m
    unit = unit_of(m.unit)
    if unit.compares_records:
        return ("<p>This release's privacy unit is the <b>record</b>: rows are perturbed or generated one "
                "by one, so there are no equivalence classes or generating groups to count. Its risk is "
                "measured by comparing each original record with the published ones (below).</p>")
    if unit.claims_by_construction:
        return _dp_figures(page)
    if m.data_files:  # a distributed release: its classes as measured when published, never re-read here
        return _row_files_classes(page, threshold)
    what = unit.class_name
    sizes, note = _class_sizes(page)
    if sizes is None:
        return (f'<p class="muted">The {what} sizes cannot be computed from '
                f"{esc(data_files_text(m))}: {esc(note)}.</p>")
    if sizes.size == 0:
        return "<p class=\"muted\">The published table has no rows.</p>"
    small = int(sizes[sizes < threshold].sum()) if threshold is not None else 0
    if m.parts:  # a partitioned release: each table's classes over its own quasi-identifiers
        over = _parts_grouping(page)
    elif unit.shares_quasi_identifiers:
        over = "the quasi-identifiers " + ", ".join(f"<code>{esc(q)}</code>" for q in note.split("\x00"))
    else:
        over = f"the group column <code>{esc(note)}</code>"
    tables = f" of the {len(m.parts)} tables" if m.parts else ""
    return (
        f"<p>The {fmt(int(sizes.sum()))} published rows{tables} fall into <b>{fmt(sizes.size)} "
        f"{plural(what) if sizes.size != 1 else what}</b> "
        f"(grouped by {over}): the smallest holds <b>{fmt(int(sizes.min()))}</b> "
        f"record{'s' if sizes.min() != 1 else ''}, the median "
        f"{fmt(float(np.median(sizes)))}, the mean {fmt(float(sizes.mean()))}, the largest "
        f"{fmt(int(sizes.max()))}."
        + (f" {fmt(small)} records are in {plural(what)} smaller than the policy's k = "
           f"{fmt(threshold)}."
           if threshold is not None and small else
           (f" No {what} is smaller than the policy's k = {fmt(threshold)}." if threshold is not None
            else "")) + "</p>"
        + f"<figure>{histogram_svg(sizes, threshold, what)}<figcaption>How many "
          f"{plural(what)} have "
          f"each size, counted from {esc(data_files_text(m))}"
        + (" (red: below the policy's k)." if threshold is not None else ".")
        + "</figcaption></figure>")


def _reidentification(p: PrivacyReport) -> list[str]:
    """ARX's attacker models over the classes."""
    r = p.risk
    if r is None:
        return []
    rows: list[tuple[str, ...]] = []  # the table's rows of escaped cells
    for key, name, desc in _RISK_TEXT:
        value = getattr(r, key)
        if value is None:
            continue
        if key == "records_at_risk":
            desc = f"share of records whose prosecutor risk exceeds {fmt(r.risk_threshold)}"
        rows.append((esc(name), esc(fmt(value)), esc(desc)))
    return ["<h4>Re-identification risk</h4>",
            '<p class="note">ARX\'s attacker models over the classes above (risk 1 means certain '
            "re-identification).</p>",
            html_table(("measure", "value", "meaning"), rows, num=(1,))]


def _anonymity_models(p: PrivacyReport) -> list[str]:
    """pyCANON's measures over the classes and the sensitive attributes."""
    a = p.measures
    if a is None:
        return []
    rows = []
    for key, value in a.model_dump().items():
        if value is None or key == "k_anonymity":
            continue
        shown = ", ".join(fmt(v) for v in value) if isinstance(value, list | tuple) else fmt(value)
        rows.append((f"<code>{esc(key)}</code>", esc(shown)))
    if not rows:
        return []
    return ["<h4>Anonymity models</h4>",
            f'<p class="note">pyCANON\'s measures over the classes and the sensitive attributes '
            f"({', '.join(f'<code>{esc(s)}</code>' for s in p.sensitive_attributes) or 'none'}).</p>",
            html_table(("measure", "value"), rows, num=(1,))]


def _distance_and_linkage(p: PrivacyReport) -> list[str]:
    """Linkage risk, distances to the closest record, exact matches, confidence-interval privacy."""
    s = p.synthetic
    if s is None and p.linkage_risk is None and p.dcr_quantile is None:
        return []
    rows = []
    link = s.linkage_risk if s is not None and s.linkage_risk is not None else p.linkage_risk
    if link is not None:
        rows.append(("linkage risk", esc(fmt(link)), "share of original records whose nearest published "
                     "record (standardized known columns) stands for them (record) or came from their own "
                     "group"))
    if s is not None:
        for key, value in s.dcr_quantiles.items():
            at = re.fullmatch(r"q(\d+)", key)
            name = f"DCR, {int(at.group(1))}% quantile" if at else f"DCR {key}"
            rows.append((esc(name), esc(fmt(value)), "distance from an original record to its closest "
                         "published record (standardized known columns)"))
        if s.dcr_exact_matches is not None:
            rows.append(("exact matches", esc(fmt(s.dcr_exact_matches)),
                         "share of original records published unchanged"))
        if s.confidence_interval_privacy is not None:
            rows.append(("confidence-interval privacy", esc(fmt(s.confidence_interval_privacy)),
                         "paper 000: 95% interval width of a value's estimate / the attribute's range"))
    elif p.dcr_quantile is not None:
        rows.append(("DCR at the policy's quantile", esc(fmt(p.dcr_quantile)), ""))
    return ["<h4>Distance and linkage</h4>", html_table(("measure", "value", "meaning"), rows, num=(1,))]


def _distortion(p: PrivacyReport) -> list[str]:
    """Paper 004's measures, original against published values."""
    q = p.perturbation
    if q is None:
        return []
    return ["<h4>Value distortion</h4>",
            '<p class="note">Paper 004\'s measures, original against published values (rows '
            "aligned).</p>",
            html_table(("measure", "value", "meaning"),
                       [(esc(name), esc(fmt(getattr(q, key))), esc(desc)) for key, name, desc
                        in _PERTURBATION_TEXT], num=(1,))]


def _random_queries(p: PrivacyReport) -> list[str]:
    """Paper 002's random-query attacker on the original table and on the release."""
    att = p.attacker
    if att is None:
        return []
    sides = [("original", att.original)] if att.release_is_original else [
        ("original table", att.original), ("release", att.release)]
    rows = []
    for label, getter in (
            ("queries matching a record", lambda x: fmt(x.matched_queries)),
            ("queries matching exactly one record", lambda x: pct_text(x.identifying_share)),
            ("re-identification probability, median", lambda x: fmt(x.reidentification_median)),
            ("re-identification probability, mean", lambda x: fmt(x.reidentification_mean)),
            ("re-identification probability, max", lambda x: fmt(x.reidentification_max)),
            ("sensitive association, mean", lambda x: fmt(x.sensitive_association_mean))):
        values = [getter(side) for _, side in sides]
        if all(v == "n/a" for v in values):
            continue
        rows.append((esc(label), *(esc(v) for v in values)))
    return ["<h4>Random-query attacker</h4>",
            f'<p class="note">Paper 002: {fmt(att.queries)} random queries built from original '
            "records' quasi-identifier values, asked of the original table and of the release.</p>",
            html_table(("measure", *(name for name, _ in sides)), rows, num=tuple(range(1, len(sides) + 1)),
                       compact=True)]


def _row_files_classes(page: Context, threshold: float | None) -> str:
    """A distributed release's classes, from the manifest's figures (counted over every row file when the release
    was measured; re-counted by ``ppdp validate --release``): no histogram, the table is not read here."""
    m, p = page.m, page.m.privacy
    what = unit_of(m.unit).class_name
    files = f"{fmt(len(m.data_files))} row file{'s' if len(m.data_files) != 1 else ''}"
    if p.groups is None or p.k is None:
        return (f'<p class="muted">The table is published in {files} (data/part-*.parquet); the manifest records '
                f"no {what} sizes.</p>")
    over = ", ".join(f"<code>{esc(q)}</code>" for q in p.quasi_identifiers) or "no column"
    mean = f", the mean {fmt(p.mean_group_size)}" if p.mean_group_size is not None else ""
    below = ""
    if threshold is not None:
        below = (f" No {what} is smaller than the policy's k = {fmt(threshold)}." if p.k >= threshold else
                 f" The smallest is below the policy's k = {fmt(threshold)}.")
    return (f"<p>The {fmt(p.records)} published rows, in {files} (data/part-*.parquet), fall into "
            f"<b>{fmt(p.groups)} {plural(what) if p.groups != 1 else what}</b> (grouped by {over}): the smallest "
            f"holds <b>{fmt(p.k)}</b> record{'s' if p.k != 1 else ''}{mean}.{below}</p>"
            '<p class="note">Counted over every row file when the release was measured (the manifest\'s figures; '
            "this page does not read the whole table); <code>ppdp validate --release</code> counts them again.</p>")


def _parts_grouping(page: Context) -> str:
    """How a partitioned release's rows are grouped (HTML): each table by its own quasi-identifiers, a table with
    none as one class."""
    grouped = [f"{esc(p.name)} by {', '.join(f'<code>{esc(q)}</code>' for q in p.quasi_identifiers)}"
               for p in page.m.parts if p.rows and p.quasi_identifiers]
    whole = [esc(p.name) for p in page.m.parts if p.rows and not p.quasi_identifiers]
    text = "each table's own quasi-identifiers" + (": " + "; ".join(grouped) if grouped else "")
    if whole:
        one = len(whole) == 1
        text += (f"; {', '.join(whole)} {'has' if one else 'have'} no quasi-identifier, so "
                 f"{'its rows form' if one else 'the rows of each form'} one class")
    return text


def _class_sizes(page: Context) -> tuple[np.ndarray | None, str]:
    m, frame = page.m, page.frame
    if unit_of(m.unit).group_column:
        col = m.group_column
        if not col or col not in frame.columns:
            return None, "the group column is not in the table"
        ids = pd.factorize(frame[col], use_na_sentinel=False)[0]
        return np.bincount(ids) if len(ids) else np.zeros(0, dtype=np.int64), col
    if page.parts:  # each part's classes over its own quasi-identifiers (one class when it has none)
        sizes = [np.bincount(equivalence_class_ids(page.parts[p.name], p.quasi_identifiers))
                 if p.quasi_identifiers else np.array([p.rows]) for p in m.parts if p.rows]
        return (np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)), "each part's quasi-identifiers"
    qis = m.roles.quasi_identifiers
    missing = [q for q in qis if q not in frame.columns]
    if missing or not qis:
        return None, ("a quasi-identifier column is missing" if missing else "no quasi-identifier")
    ids = equivalence_class_ids(frame, qis)
    return (np.bincount(ids) if len(ids) else np.zeros(0, dtype=np.int64)), "\x00".join(qis)
