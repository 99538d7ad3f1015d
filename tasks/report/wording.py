"""The release in words, shared by the page and the artifacts: the two-part verdict (policy, safety floor), what the
release protects against and what not, what it publishes, and each method's description (which the method states
itself)."""

from __future__ import annotations

from collections.abc import Sequence

from ppdp.schemas.criteria.registry import CRITERIA
from ppdp.schemas.manifest import Manifest
from ppdp.schemas.privacy import FLOOR, FloorRule
from ppdp.schemas.reports import AttackerView, Claim, ExpectationOutcome, TuningTrace
from ppdp.schemas.units import DIFFERENTIAL_PRIVACY, unit_of
from ppdp.tasks.privacy.attacker import known_text
from ppdp.tasks.report.fmt import fmt, share
from ppdp.tasks.sanitize.registry import REGISTRY

RECHECK_TEXT = {"published": "published table", "original": "needs the original input",
                 "construction": "the manifest (by construction)"}
GATE_MEASURE = {"min_accuracy_ratio": "accuracy trained on the release / trained on the original rows",
                 "delta_r": "paper 004's R_p - (1 - epsilon) R_o, worst classifier"}

_SENSITIVE_GATES = {c.key: c.sensitive for c in CRITERIA if c.sensitive}
"""The gates that bound attribute disclosure, by claim name: the model's name as the report words it (each criterion's
own, :attr:`ppdp.schemas.criteria.base.Criterion.sensitive`)."""
PRE_FLOOR = "made before the safety floor (not measured)"
"""What the report says of a release whose manifest predates the safety floor (no attacker's view, no floor)."""


def method_text(name: str) -> str:
    """What a method does, in the words of its own class (:attr:`ppdp.tasks.sanitize.base.Sanitizer.description`,
    read through the registry); its name alone for a method that states none or is no longer registered."""
    method = REGISTRY.get(name)
    return method.description if method is not None and method.description else name


def policy_verdict(manifest: Manifest) -> bool | None:
    """Whether every privacy claim of the policy holds (None: the manifest lists no claim)."""
    claims = manifest.privacy.claims
    return all(c.passed for c in claims) if claims else None


def floor_verdict(manifest: Manifest) -> bool | None:
    """Whether the release meets the safety floor: its floor and every part's hold (None: made before the floor)."""
    floors = [f for f in (manifest.privacy.floor, *(p.privacy.floor for p in manifest.parts)) if f is not None]
    if manifest.privacy.floor is None and not floors:
        return None
    return all(f.holds for f in floors)


def verdict_text(manifest: Manifest) -> tuple[str, str]:
    """(the policy's part, the floor's part) of the two-part verdict, in words."""
    policy = {True: "policy holds", False: "policy fails", None: "no privacy claim"}[policy_verdict(manifest)]
    floor = {True: "safety floor holds", False: "below the safety floor", None: PRE_FLOOR}[floor_verdict(manifest)]
    return policy, floor


def floor_rule(claim: Claim) -> FloorRule | None:
    """The row of :data:`ppdp.schemas.privacy.FLOOR` a floor claim measures (None: not a floor claim)."""
    name = claim.name.removeprefix("floor: ")
    for rule in FLOOR:
        words = rule.key.replace("_", " ")
        if name == words or name.startswith(words + " ("):
            return rule
    return None


def floor_source_kind(rule: FloorRule | None) -> str:
    """'ppdp's choice' or 'cited standard': where a floor row's limit comes from."""
    if rule is None:
        return "unknown"
    return "ppdp's choice" if rule.source.startswith("ppdp's choice") else "cited standard"


def _columns_text(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "no column"


def _disclosure_text(view: AttackerView) -> str:
    """Each measured attribute disclosure against its baseline, in one clause each (shares only)."""
    out = []
    for d in view.disclosure:
        within = f" within ±{fmt(d.tolerance, 3)}" if d.tolerance is not None else " exactly"
        out.append(f"{d.column}{within} for {share(d.disclosure)} of the records, against {share(d.baseline)} by the "
                   f"best constant guess without the release ({100 * d.gain:+.1f} points)")
    return "; ".join(out)


def worst_part_text(m: Manifest) -> str:
    """Which table of a partitioned release the release's attacker's view is (the one with the smallest class)."""
    view = m.privacy.attacker_view
    name = next((p.name for p in m.parts if p.privacy.attacker_view == view), None)
    return (f"Its {len(m.parts)} tables are each seen on their own; these figures are those of "
            + (f"{name}, " if name else "") + "the table with the smallest class, which a linking attacker would "
            "pick.")


def protection_text(manifest: Manifest) -> tuple[str, str]:
    """(what the release protects against, what it does not), two plain sentences from the attacker's view: names,
    counts and shares only. A manifest made before the safety floor says that it was not measured."""
    m = manifest
    view = m.privacy.attacker_view
    unit_name = unit_of(m.unit).plural
    if view is None:
        return (f"This release was made before the safety floor: what an attacker holding the table can learn was not "
                f"measured, so this report can only state its privacy claims, measured over {unit_name} "
                "(section 2).",
                "Which disclosure it does not protect against was not assessed (no attacker's view in its manifest).")
    known = _columns_text(view.quasi_identifiers)
    beside = (f", with {_columns_text(view.counted_columns)} published beside them and counted in"
              if view.counted_columns else "")
    disclosed = _disclosure_text(view)
    if view.identity_by == "none":
        cols = ", ".join(d.column for d in view.disclosure) or "its protected columns"
        protects = (f"This release protects against attribute disclosure of {cols}: "
                    + (f"an attacker holding a person's quasi-identifiers learns {disclosed}." if disclosed
                       else "not measured for this release."))
        lacks = (f"It does not protect against identity disclosure: who is in which row is not hidden: the "
                 f"quasi-identifiers ({known}) are published unchanged{beside}, and {share(view.records_alone)} of "
                 "the published records are alone on them.")
        return protects + (" " + worst_part_text(m) if m.parts else ""), lacks
    if view.identity_by == "classes":
        protects = (f"This release protects against identity disclosure (finding a person's row): equivalence "
                    f"classes hide identities: every published record shares its quasi-identifiers as published "
                    f"({known}{beside}) with the other records of its class; the smallest class holds "
                    f"{fmt(view.smallest_class)} records, {share(view.records_alone)} of the records are alone on "
                    f"them and the average re-identification risk is {fmt(view.average_risk, 3)}.")
        lacks = "It does not hide what a class's rows publish: whoever finds a person's class learns its values"
    elif view.identity_by == "groups":
        groups = (f" ({fmt(view.groups)} groups, the smallest of {fmt(view.smallest_group)} rows)"
                  if view.groups is not None else "")
        copies = (f"; {share(view.exact_copies)} of the published rows equal an input record"
                  if view.exact_copies is not None else "")
        protects = (f"This release protects against identity disclosure (finding a person's row): generating "
                    f"groups hide identities: each published row is synthesized from a group of records{groups} and "
                    f"stands for none of them{copies}.")
        lacks = ("It does not hide what a group's records have in common: the synthesized values describe the group "
                 "as a whole")
    elif view.identity_by == DIFFERENTIAL_PRIVACY.identity_by:
        copies = (f" ({share(view.exact_copies)} of the generated rows equal an input record on every column: "
                  "combinations common in the data are generated whoever is in it)"
                  if view.exact_copies is not None else "")
        protects = (f"This release protects against identity and membership disclosure by differential privacy: "
                    f"every row is generated from noisy counts{copies}, and whether any one person's record was in "
                    f"the input changes the odds of any published table by at most a factor e^{fmt(view.epsilon)} "
                    f"(up to a probability {fmt(view.delta)}).")
        lacks = ("It does not hide what holds for the population: the counts it was fitted to (one- and two-way "
                 "combinations of columns) are published with noise, so an attacker learns what is common, not "
                 "who is in the data")
    else:
        link = (f" An attacker who knows each input record's values on {known_text(view)} and takes the "
                f"published row nearest to it (standardized distance) finds that record's own row for "
                f"{share(view.linkage_risk)} of the records (linkage risk {fmt(view.linkage_risk, 3)})"
                if view.linkage_risk is not None else " Linkage was not measured")
        copies = (f"; {share(view.exact_copies)} of the published rows equal an input record on those columns"
                  if view.exact_copies is not None else "")
        protects = (f"This release protects against identity disclosure record by record: each published row "
                    f"is perturbed or generated.{link}{copies}.")
        lacks = (f"It does not hide identities in classes: {share(view.records_alone)} of the published records are "
                 f"alone on their quasi-identifiers as published ({known}{beside}), so the protection rests on the "
                 "perturbation alone")
    if m.parts:
        protects += " " + worst_part_text(m)
    if disclosed:
        lacks += f"; attribute disclosure measured: an attacker holding a person's known columns learns {disclosed}."
    else:
        bounded = [_SENSITIVE_GATES[c.name] for c in m.privacy.claims if c.name in _SENSITIVE_GATES]
        lacks += (f"; the policy's {', '.join(dict.fromkeys(bounded))} claims bound that (section 2)." if bounded else
                  "; attribute disclosure was not measured for this release.")
    return protects, lacks


def below_floor_text(manifest: Manifest) -> str | None:
    """One sentence when the release fails the safety floor (None when it holds or was not measured)."""
    if floor_verdict(manifest) is not False:
        return None
    floor = manifest.privacy.floor
    failed = [c.name.removeprefix("floor: ") for c in floor.failed] if floor is not None else []
    return (f"It is below the safety floor ({', '.join(failed) or 'a part fails it'})"
            + (": published on purpose, see section 3." if floor is not None and floor.accepted is not None
               else ": see section 3."))


def rows_text(manifest: Manifest) -> str:
    """What the release publishes, counted: "3,000 rows", or for a partitioned release (every record a row of each
    of its tables) "2,400 records in 6 tables, 14,400 rows"."""
    m = manifest
    if m.data_files:
        return (f"{fmt(m.rows)} row{'s' if m.rows != 1 else ''} in {len(m.data_files)} "
                f"file{'s' if len(m.data_files) != 1 else ''}")
    if not m.parts:
        return f"{fmt(m.rows)} row{'s' if m.rows != 1 else ''}"
    return (f"{fmt(m.rows)} record{'s' if m.rows != 1 else ''} in {len(m.parts)} "
            f"table{'s' if len(m.parts) != 1 else ''}, {fmt(sum(p.rows for p in m.parts))} rows")


def data_files_text(manifest: Manifest) -> str:
    """The published data file(s) a report counts from: data.parquet, a partitioned release's part files, or a
    distributed release's row files."""
    if manifest.data_files:
        return row_files_text(manifest)
    files = [p.file for p in manifest.parts]
    if not files:
        return "data.parquet"
    if len(files) <= 3:
        return ", ".join(files[:-1]) + (" and " if len(files) > 1 else "") + files[-1]
    return f"its {len(files)} part files ({files[0]} to {files[-1]})"


def row_files_text(manifest: Manifest) -> str:
    """A distributed release's row files in a phrase: ``its 3 row files (data/part-*.parquet)``."""
    n = len(manifest.data_files)
    return f"its {fmt(n)} row file{'s' if n != 1 else ''} (data/part-*.parquet)"


def objective_text(trace: TuningTrace) -> str:
    """The objective a tuning search really followed, in words: a lattice search keeps the node of least
    ``measure`` among those meeting every gate (the spec's tuning.objective, which the trace carries, is for the
    searches over one parameter)."""
    if trace.lattice is not None:
        return f"least {trace.lattice.measure} among the nodes meeting every gate"
    return (trace.objective or "none").replace("_", " ")


def covers_every_row(m: Manifest) -> bool:
    """Whether the release publishes the held-out rows too (sanitized like the others: generalization)."""
    if m.utility is None or m.ingest.rows is None:  # withheld (a differential_privacy release: every row generated)
        return False
    removed = m.rare_categories.rows_removed if m.rare_categories is not None else 0
    return m.rows > m.ingest.rows - removed - m.utility.test_rows


def check_counts(outcomes: Sequence[ExpectationOutcome]) -> tuple[int, int]:
    return sum(o.success for o in outcomes), len(outcomes)


def label_min_count(manifest: Manifest) -> int:
    """How often a category must occur in the published table to be named in a report: the largest of the
    release's smallest class, the policy's k and the rare-value rule's k; 2 when none is set."""
    candidates = [manifest.privacy.k, manifest.spec.privacy.k,
                  manifest.rare_categories.k if manifest.rare_categories is not None else None]
    return max([2] + [int(c) for c in candidates if c is not None])
