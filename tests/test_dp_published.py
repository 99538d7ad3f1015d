"""Issue 30, item 3: a DP release is DP *as published*, and no published hash confirms a guessed input.

Fast: the keyed input digest (salted, checked only with the publisher's key), what a differential_privacy manifest
withholds and where it is kept (:mod:`ppdp.tasks.private_record`), its report, the audit trail's digests checked
against the private records (and not checked, in one line, without the key), a refused DP run's reason, and a trail
written before keyed digests. Slow: the attack of the issue replayed on two DP releases of a growing table, with
the test's own recount from the input, reading every file under the publish root, the audit trail and the Prefect
artifacts."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.manifest import ColumnTreatment, Manifest
from ppdp.schemas.reports import (
    AttackerView,
    AttributeDisclosure,
    ColumnTag,
    DifferentialPrivacy,
    ExpectationOutcome,
    FloorReport,
    IngestReport,
    MethodRecord,
    PrivacyReport,
    RareCategoryColumn,
    RareCategoryReport,
    Roles,
    SyntheticMeasures,
    TuningTrace,
)
from ppdp.schemas.utility import ClassAccuracy, UtilityReport
from ppdp.tasks import audit, digests, keys, private_record
from ppdp.tasks.core.errors import PublishError, ReleaseRejected
from ppdp.tasks.publish import collect_versions
from ppdp.tasks.spec import load_spec
from tests.conftest import census

runner = CliRunner()
BINS = {"age": [17, 30, 45, 60, 90], "hours_per_week": [0, 30, 40, 50, 99]}
CATEGORIES = {"sex": ["Female", "Male"], "income": ["<=50K", ">50K"]}
EDUCATION = ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors", "Masters",
             "Doctorate"]
COLUMNS = ["person_id", "age", "sex", "education", "hours_per_week", "income"]
# exact figures of an imagined input: distinctive numbers, so that finding one in a published file means it leaked
ROWS, TRAIN, HELD, TRAIN_BY_CLASS, HELD_BY_CLASS = 4817, 4335, 482, {"<=50K": 3391, ">50K": 944}, {"<=50K": 377,
                                                                                                     ">50K": 105}
ACCURACY_ORIGINAL = 0.7593360995850622  # 366 / 482


# -- helpers ------------------------------------------------------------------------------------------------------
def numbers_in(text: str) -> set[float]:
    """Every decimal number written in ``text`` (thousands separators read; hex runs, ids and hashes skipped). A JSON
    escape (``\\n`` before ``1,124 rows``) reads as the space it stands for, not as a letter glued to the number."""
    text = re.sub(r"\\[nrt]", " ", text)
    text = re.sub(r"\b[0-9a-f]{16,}\b|\b[0-9a-f]{8}-[0-9a-f-]{27}\b|\d{8}T\d{6}Z-[0-9a-f]{8}", " ", text)
    out = set()
    for token in re.findall(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\d,])|(?<![\w.])\d+(?:\.\d+)?(?![\w])", text):
        out.add(float(token.replace(",", "")))
    return out


def dp_spec(tmp_path: Path, data: Path, root: Path, **extra) -> Path:
    spec = {"dataset": "growing", "source": {"path": str(data)},
            "columns": {"person_id": "identifier", "age": "quasi_identifier", "sex": "quasi_identifier",
                        "education": {"role": "quasi_identifier", "order": EDUCATION}, "hours_per_week": "other",
                        "income": "class"},
            "privacy": {"max_epsilon": 1.0, "max_delta": 1e-6},
            "method": {"name": "dp_synthesizer", "epsilon": 1.0, "delta": 0.0, "bins": BINS,
                       "categories": CATEGORIES},
            "tuning": {"strategy": "fixed"},
            "utility": {"classifier": "naive_bayes", "test_fraction": 0.1, "min_accuracy_ratio": None},
            "publish": {"root": str(root)}, "seed": 5, **extra}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def computed_manifest(tmp_path: Path) -> Manifest:
    """A differential_privacy manifest as a release computes it (every figure of the imagined input in it)."""
    data = tmp_path / "input.csv"
    census(40)[COLUMNS].to_csv(data, index=False)
    spec = load_spec(dp_spec(tmp_path, data, tmp_path / "root"))
    tags = [ColumnTag(name="person_id", role=Role.identifier, kind=ColumnKind.nominal, source="declared",
                      reason="declared in spec", treatment="dropped"),
            *(ColumnTag(name=c, role=Role.quasi_identifier, kind=ColumnKind.nominal, source="declared",
                        reason="declared in spec") for c in ("age", "sex", "education")),
            ColumnTag(name="hours_per_week", role=Role.other, kind=ColumnKind.numeric, source="auto",
                      reason=f"many distinct values: 97 distinct among {ROWS} non-missing values"),
            ColumnTag(name="income", role=Role.class_, kind=ColumnKind.nominal, source="declared",
                      reason="declared in spec")]
    roles = Roles(columns=tags)
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    keyed = digests.input_digest(sha, spec.publish.root)
    ingest = IngestReport(path=str(data), format="csv", rows=ROWS, columns=COLUMNS, input_digest=keyed.digest,
                          input_key_id=keyed.key_id, private_sha256=sha, suite="ppdp_input_base",
                          expectation_count=1, expectations=[ExpectationOutcome(
                              expectation="expect_column_values_to_not_be_null", column="age", success=True,
                              unexpected_count=613, element_count=ROWS, observed=float(ROWS))])
    view = AttackerView(protects="identity", identity_by="differential_privacy", records=4790,
                        quasi_identifiers=["age", "sex", "education"], classes=900, smallest_class=1,
                        records_alone=0.1, average_risk=0.2, highest_risk=1.0, exact_copies=0.0831,
                        linkage_risk=0.0713, nearest_distance={"q05": 0.0419},
                        disclosure=[AttributeDisclosure(column="income", kind="category", records=HELD,
                                                        disclosure=0.6631, baseline=0.6012, gain=0.0619)],
                        epsilon=1.0, delta=0.0)
    dp = DifferentialPrivacy(library="opendp test", mechanism="mst", definition="pure", epsilon=1.0, delta=0.0,
                             epsilon_spent=1.0, delta_spent=0.0, rows="the model's noisy estimate")
    privacy = PrivacyReport(unit="differential_privacy", quasi_identifiers=["age", "sex", "education"],
                            records=4790, linkage_risk=0.0713,
                            synthetic=SyntheticMeasures(dcr_quantiles={"q05": 0.0419}), attacker_view=view,
                            floor=FloorReport(holds=True, applies=["differential_privacy"]), dp=dp)
    utility = UtilityReport(classifier="naive_bayes", train_rows=4790, test_rows=HELD, accuracy=0.7012,
                            accuracy_original=ACCURACY_ORIGINAL, ratio=0.7012 / ACCURACY_ORIGINAL,
                            per_class=[ClassAccuracy(label=k, support=v, sanitized=0.5, original=0.6)
                                       for k, v in HELD_BY_CLASS.items()], mean_shift=0.1, correlation_loss=0.2)
    rare = RareCategoryReport(k=2, columns_checked=3, rows_in=ROWS, rows_out=ROWS, columns=[RareCategoryColumn(
        name="education", action="merged", values_merged=1, cells_affected=3, token="(rare)")])
    treatments = [ColumnTreatment(position=i, name=t.name, role=t.role, reason=f"{t.reason}; synthesized by "
                                  "dp_synthesizer (unit differential_privacy)", rare_cells=3 if t.name == "education"
                                  else 0, treatment="synthesized" if t.name != "person_id" else "dropped")
                  for i, t in enumerate(tags)]
    return Manifest(
        release_id="20260101T000000Z-0badc0de", dataset="growing", created_at=datetime.now(UTC),
        input_digest=keyed.digest, input_key_id=keyed.key_id, rows=4790, columns=COLUMNS[1:],
        unit="differential_privacy", treatments=treatments, spec=spec, spec_sha256="0" * 64, roles=roles,
        rare_categories=rare, ingest=ingest, method=MethodRecord(name="dp_synthesizer", params={"epsilon": 1.0},
                                                                 unit="differential_privacy", seconds=1.0),
        seed=5, privacy=privacy, utility=utility,
        tuning=TuningTrace(strategy="fixed", parameter="epsilon", class_sizes=TRAIN_BY_CLASS, chosen=1.0,
                           rule="method.epsilon = 1.0 from the spec (not tuned)"),
        versions=collect_versions(), flow_run_id=None)


def exact_figures() -> set[float]:
    return {ROWS, TRAIN, HELD, *TRAIN_BY_CLASS.values(), *HELD_BY_CLASS.values(),
            *(TRAIN_BY_CLASS[c] + HELD_BY_CLASS[c] for c in TRAIN_BY_CLASS), 613}


# -- keyed digests (fast) -----------------------------------------------------------------------------------------
def test_a_keyed_digest_is_salted_confirms_no_guessed_input_and_is_checked_only_with_the_key(tmp_path):
    key = digests.digest_key(b"k" * 32)
    rows = "\n".join(f"P{i},{40 + i % 3}" for i in range(50))
    candidates = [f"{rows}\nP50,{hours}\n".encode() for hours in range(100)]  # the newcomer's hours: 100 guesses
    truth = candidates[37]
    sha = hashlib.sha256(truth).hexdigest()
    first, second = digests.keyed(sha, key), digests.keyed(sha, key)
    assert first.key_id == second.key_id and first.key_id.startswith("hmac-sha256:")
    assert first.digest != second.digest  # a fresh salt per run: equal inputs are not told apart
    guesses = {hashlib.sha256(c).hexdigest() for c in candidates}
    for published in (first.digest, second.digest):
        assert not any(g in published for g in guesses)  # the attacker's 100 hashes match nothing published
    assert digests.check(sha, first.digest, first.key_id, key).verdict == "holds"
    assert digests.check(hashlib.sha256(candidates[36]).hexdigest(), first.digest, first.key_id, key).verdict == \
        "differs"
    absent = digests.check(sha, first.digest, first.key_id, None)
    assert absent.verdict == "not checked" and "series key is not on this machine" in absent.why
    other = digests.check(sha, first.digest, first.key_id, digests.digest_key(b"o" * 32))
    assert other.verdict == "not checked" and first.key_id in other.why


# -- what a DP manifest withholds (fast) --------------------------------------------------------------------------
def test_a_dp_manifest_withholds_every_figure_of_its_input_and_its_private_record_keeps_them(tmp_path):
    computed = computed_manifest(tmp_path)
    public, record = private_record.split(computed)
    assert public.withheld is not None and set(public.withheld.fields) == set(private_record.WITHHELD)
    assert "never under the publish root" in public.withheld.kept_in
    text = public.model_dump_json()
    Manifest.model_validate_json(text)  # the public form is a valid manifest
    found = numbers_in(text)
    assert not exact_figures() & found, exact_figures() & found
    assert repr(ACCURACY_ORIGINAL) not in text and "0.7593" not in text
    for figure in ("0.0831", "0.0713", "0.0419", "0.6631", "0.7012"):  # measured against the input
        assert figure not in text, figure
    assert record.input_sha256 == computed.ingest.private_sha256 and record.input_sha256 not in text
    data = json.loads(text)
    assert data["ingest"]["rows"] is None and data["utility"] is None and data["rare_categories"] is None
    assert data["tuning"]["class_sizes"] == {} and data["privacy"]["attacker_view"]["exact_copies"] is None
    assert {t["rare_cells"] for t in data["treatments"]} == {None}
    hours = next(c for c in data["roles"]["columns"] if c["name"] == "hours_per_week")
    assert hours["reason"].startswith("tagged automatically") and str(ROWS) not in hours["reason"]
    assert public.privacy.claims == computed.privacy.claims and public.privacy.dp == computed.privacy.dp
    # the private record keeps the manifest as computed: the attack of the issue works on it, not on the public one
    kept = Manifest.model_validate(record.manifest)
    assert kept.ingest.rows == ROWS and kept.tuning.class_sizes == TRAIN_BY_CLASS
    assert kept.utility is not None and kept.utility.accuracy_original == ACCURACY_ORIGINAL
    # every other unit publishes its aggregates as before, its unkeyed hash kept privately too
    other = computed.model_copy(update={"unit": "record"})
    same, kept_sha = private_record.split(other)
    assert same is other and same.withheld is None and kept_sha.input_sha256 == record.input_sha256


def test_the_report_of_a_dp_release_renders_what_is_withheld_and_no_figure_of_the_input(tmp_path):
    from ppdp.tasks.report import render_report, report_markdown, report_table

    public, _ = private_record.split(computed_manifest(tmp_path))
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / "manifest.json").write_text(public.model_dump_json(indent=2), encoding="utf-8")
    census(60)[COLUMNS[1:]].to_parquet(folder / "data.parquet", index=False)
    page = render_report(folder)
    artifacts = report_markdown(public) + json.dumps(report_table(public), default=str)
    for text in (re.sub(r"<style.*?</style>", "", page, flags=re.S), artifacts):  # a chart's text stays in
        found = numbers_in(re.sub(r"<[^>]+>", " ", text))
        assert not exact_figures() & found, exact_figures() & found
        assert "0.7593" not in text and "0.759" not in text and "0.0831" not in text
        assert "withheld" in text
    assert "Utility</h2>" in page or "Utility" in page
    assert "one bit about the data" in page and public.input_digest in page


# -- the audit trail (fast) ---------------------------------------------------------------------------------------
def _entry(root: Path, sha: str, release_id: str = "20260101T000000Z-00000001") -> audit.AuditEntry:
    keyed = digests.input_digest(sha, root)
    entry = audit.append_entry(root, release_id=release_id, dataset="d", status="error", reason="boom",
                               started_at=datetime.now(UTC), input_digest=keyed.digest, input_key_id=keyed.key_id)
    private_record.Record(release_id=release_id, dataset="d", input_sha256=sha, input_digest=keyed.digest,
                          input_key_id=keyed.key_id).write(entry.trail_id, root)
    return entry


def test_audit_verify_checks_each_input_digest_with_the_key_and_says_in_one_line_why_not_without(
        tmp_path, monkeypatch):
    root = tmp_path / "root"
    sha = hashlib.sha256(b"the input").hexdigest()
    entry = _entry(root, sha)
    row = sqlite3.connect(audit.db_path(root)).execute("SELECT * FROM entries").fetchone()
    assert sha not in repr(row) and "input_sha256" not in entry.model_dump()  # the trail never holds it
    notes: list[str] = []
    assert audit.verify(root, notes=notes) == []
    assert notes == ["input digests of 1 entries checked against the publisher's private records"]
    result = runner.invoke(app, ["audit", "verify", "--root", str(root)])
    assert result.exit_code == 0 and "checked against the publisher's private records" in result.output
    # the private record altered: the digest no longer matches it (a finding)
    path = private_record.record_path(entry.trail_id, entry.release_id)
    assert path is not None and oct(path.stat().st_mode & 0o777) == "0o600"
    record = json.loads(path.read_text())
    record["input_sha256"] = hashlib.sha256(b"another input").hexdigest()
    path.write_text(json.dumps(record))
    problems = audit.verify(root)
    assert len(problems) == 1 and "its input digest is not the keyed digest" in problems[0]
    # a verifier without the publisher's series key: one line, no finding
    auditor = tmp_path / "auditor"
    monkeypatch.setenv("PPDP_AUDIT_TRUSTED_KEYS", str(keys.default_key_path()))
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(auditor))
    notes = []
    assert audit.verify(root, notes=notes) == []
    assert notes == [f"input digests of 1 entries not checked: {digests.NO_KEY}"]
    result = runner.invoke(app, ["audit", "verify", "--root", str(root)])
    assert result.exit_code == 0 and result.output.count("not checked") == 1
    assert not auditor.exists()  # verifying created no key


def test_a_refused_dp_run_keeps_its_reason_private_and_its_input_keyed(tmp_path):
    root = tmp_path / "root"
    sha = hashlib.sha256(b"rows").hexdigest()
    keyed = digests.input_digest(sha, root)
    error = ReleaseRejected(f"utility gate failed: min_accuracy_ratio {ACCURACY_ORIGINAL:.4f} < 0.9",
                            ["min_accuracy_ratio"])
    entry = audit.record_refusal(root, release_id="20260101T000000Z-0000000a", dataset="d", error=error,
                                 started_at=datetime.now(UTC), input_digest=keyed.digest, input_key_id=keyed.key_id,
                                 private_sha256=sha, withhold=True)
    assert entry is not None and entry.status == "rejected"
    assert entry.reason.startswith("ReleaseRejected: reason withheld") and "0.7593" not in entry.reason
    kept = private_record.read_record(entry.trail_id, entry.release_id)
    assert kept is not None and kept.reason == str(error) and kept.input_sha256 == sha
    assert sha.encode() not in audit.db_path(root).read_bytes()


def test_a_trail_written_before_keyed_digests_still_verifies_and_is_never_appended_to(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    legacy = audit.LEGACY_COLUMNS
    with sqlite3.connect(audit.db_path(root)) as conn:
        conn.execute(f"CREATE TABLE entries (seq INTEGER PRIMARY KEY, {', '.join(c + ' TEXT' for c in legacy[1:])})")
        conn.execute("CREATE TABLE head (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, entry_hash TEXT "
                     "NOT NULL)")
        key = keys.signing_key(root)
        fields = {"seq": 1, "trail_id": "ab" * 16, "release_id": "r1", "dataset": "d", "status": "error",
                  "completes": None, "reason": "old", "spec_sha256": None, "input_sha256": "cd" * 32,
                  "output_sha256": None, "manifest_sha256": None, "files": None, "started_at": "2025-01-01T00:00:00",
                  "finished_at": "2025-01-01T00:00:01", "user": "u", "host": "h", "flow_run_id": None,
                  "key_id": key.key_id, "prev_hash": audit.GENESIS}
        fields["entry_hash"] = audit.compute_hash(fields)
        fields["signature"] = key.sign(audit.signed_message(fields["entry_hash"]))
        conn.execute(f"INSERT INTO entries ({', '.join(legacy)}) VALUES ({', '.join('?' for _ in legacy)})",
                     [fields[c] for c in legacy])
        conn.execute("INSERT INTO head VALUES (1, 1, ?)", (fields["entry_hash"],))
    notes: list[str] = []
    assert audit.verify(root, notes=notes) == [] and "unkeyed SHA-256" in notes[0]
    [entry] = audit.list_entries(root)
    assert entry.input_sha256 == "cd" * 32 and entry.input_digest is None
    with pytest.raises(PublishError, match="before keyed input digests"):
        audit.append_entry(root, release_id="r2", dataset="d", status="error", reason="new",
                           started_at=datetime.now(UTC))


# -- the attack of the issue, replayed (slow) ---------------------------------------------------------------------
def newcomer_class(totals_before: dict[str, int] | None, totals_after: dict[str, int] | None) -> str | None:
    """The attack: the class whose total grew by one between two releases (None when the releases give no exact
    class totals)."""
    if not totals_before or not totals_after:
        return None
    grown = [c for c in totals_after if totals_after[c] - totals_before.get(c, 0) == 1]
    return grown[0] if len(grown) == 1 else None


def class_totals(manifest: dict) -> dict[str, int] | None:
    """Exact class totals as a manifest used to publish them: training rows per class (the tuning trace) plus
    held-out rows per class (the utility report)."""
    train = (manifest.get("tuning") or {}).get("class_sizes") or {}  # by class number, in sorted label order
    held = {c["label"]: c["support"] for c in ((manifest.get("utility") or {}).get("per_class") or [])}
    labels = {f"class #{i}": label for i, label in enumerate(sorted(held))}
    if not train or not held or {labels.get(c) for c in train} != set(held):
        return None
    return {labels[c]: n + held[labels[c]] for c, n in train.items()}


BINARY = (".parquet", ".png", ".db")


def everything_published(root: Path) -> dict[str, str]:
    """Every file under the publish root as text (bytes as latin-1), and the audit trail's every field."""
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        out[str(path)] = path.read_bytes().decode("latin-1")
        if path.name == audit.DB_NAME:
            with sqlite3.connect(path) as conn:
                out[f"{path} (entries)"] = json.dumps([list(r) for r in conn.execute("SELECT * FROM entries")])
    return out


@pytest.mark.slow  # two DP releases through ppdp run (one synthesis each): about a minute or two
@pytest.mark.usefixtures("prefect_harness")
def test_two_dp_releases_of_a_growing_table_publish_no_exact_figure_of_their_inputs(tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    root, data = tmp_path / "releases", tmp_path / "growing.csv"
    people = census(1238, seed=11)[COLUMNS]
    people["hours_per_week"] = people["hours_per_week"].clip(0, 99)
    inputs, folders, records = [], [], []
    for rows in (1237, 1238):  # the second release: one newcomer more
        table = people.head(rows)
        table.to_csv(data, index=False)
        inputs.append(table.copy())
        result = runner.invoke(app, ["run", str(dp_spec(tmp_path, data, root))], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        [folder] = [p.parent for p in root.glob("growing/*/manifest.json") if p.parent not in folders]
        folders.append(folder)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        record = private_record.read_record(audit.trail_id(root) or "", manifest["release_id"])
        assert record is not None and record.manifest is not None
        records.append(record)
    newcomer = str(people["income"].iloc[1237])
    # the test's own recount from each input: row count, class totals, rare values (seen once)
    exact: set[float] = set()
    for table, record in zip(inputs, records, strict=True):
        totals = table["income"].value_counts().to_dict()
        exact |= {len(table), *totals.values()}
        for column in ("sex", "education", "income"):
            exact |= set(table[column].value_counts().tolist())  # every category's count
        kept = record.manifest
        assert kept is not None and kept["ingest"]["rows"] == len(table)
        assert class_totals(kept) == totals  # the publisher's record holds the exact totals ...
        exact |= {kept["utility"]["test_rows"], kept["utility"]["train_rows"], *kept["tuning"]["class_sizes"].values(),
                  *(c["support"] for c in kept["utility"]["per_class"])}
    # ... so the attack of the issue works on the private records (the test can fail) ...
    assert newcomer_class(class_totals(records[0].manifest or {}), class_totals(records[1].manifest or {})) == newcomer
    # ... and finds nothing in what is published
    published = [json.loads((f / "manifest.json").read_text(encoding="utf-8")) for f in folders]
    assert newcomer_class(class_totals(published[0]), class_totals(published[1])) is None
    # figures computed under DP or on the published tables are allowed, even when equal to an exact one by chance
    allowed: set[float] = set()
    for folder, manifest in zip(folders, published, strict=True):
        synthetic = pd.read_parquet(folder / "data.parquet")
        allowed |= {len(synthetic), *synthetic["income"].value_counts().tolist()}
        allowed |= numbers_in(json.dumps(manifest["privacy"]["attacker_view"]))  # the published table's figures
    # rare values are small counts, checked by what the manifest holds (below) rather than by a number's presence
    forbidden = {x for x in exact if x >= 100} - allowed
    originals = [repr(float(r.manifest["utility"]["accuracy_original"])) for r in records if r.manifest]
    shas = [hashlib.sha256(t.to_csv(index=False).encode()).hexdigest() for t in inputs]
    assert shas[1] == hashlib.sha256(data.read_bytes()).hexdigest()
    candidates = []  # the attacker holds every row but the newcomer's and guesses its hours: 100 candidate files
    for hours in range(100):
        guess = people.head(1238).copy()
        guess.loc[1237, "hours_per_week"] = hours
        candidates.append(hashlib.sha256(guess.to_csv(index=False).encode()).hexdigest())
    assert shas[1] in candidates  # the guess that is right hashes to the input's SHA-256
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
            any_=["ppdp-growing-release", "ppdp-growing-claims"])))
    texts = everything_published(root)
    texts.update({f"artifact {a.key} {a.id}": a.data if isinstance(a.data, str) else json.dumps(a.data, default=str)
                  for a in artifacts})  # as stored: a markdown artifact's text, a table artifact's JSON
    assert len([a for a in artifacts]) >= 4  # a markdown and a table artifact per release
    assert any(name.endswith("audit.db") for name in texts) and sum(n.endswith("report.html") for n in texts) == 2
    for name, text in texts.items():
        for sha in (*shas, *candidates):
            assert sha not in text, f"{name}: an unkeyed input hash"
        if name.endswith(BINARY):
            continue  # the synthetic rows themselves (DP), a plot, the database's bytes (its fields: "(entries)")
        words = re.sub(r"<style.*?</style>|<[^>]+>", " ", text, flags=re.S)  # the text, a chart's labels too
        leaked = numbers_in(words) & forbidden
        assert not leaked, f"{name}: exact figures of an input {sorted(leaked)}"
        for accuracy in originals:
            assert accuracy not in text and f"{float(accuracy):.4f}" not in words, f"{name}: the original accuracy"
    for manifest in published:
        assert manifest["withheld"]["fields"] == list(private_record.WITHHELD)
        assert manifest["ingest"]["rows"] is None and manifest["utility"] is None and manifest["series"] is None
        assert manifest["rare_categories"] is None and {t["rare_cells"] for t in manifest["treatments"]} == {None}
        assert {(e["unexpected_count"], e["element_count"], e["observed"]) for e in manifest["ingest"][
            "expectations"]} == {(None, None, None)}
    # the publisher's tools still work on both releases: verify (digests checked), validate, report
    verified = runner.invoke(app, ["audit", "verify", "--root", str(root)])
    assert verified.exit_code == 0 and "checked against the publisher's private records" in verified.output
    check = runner.invoke(app, ["validate", "--release", str(folders[1]), "--original", str(data)])
    assert check.exit_code == 0 and "input digest" in check.output and "keyed digest" in check.output, check.output
    wrong = runner.invoke(app, ["validate", "--release", str(folders[0]), "--original", str(data)])
    assert wrong.exit_code == 3 and "not the input the release was made from" in wrong.output
    assert runner.invoke(app, ["report", str(folders[0])]).exit_code == 0
