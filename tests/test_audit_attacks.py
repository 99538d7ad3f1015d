"""Attacks on a publish root by someone who can write it but does not hold the audit key (issue 8), on real
releases (Prefect test harness). Each attack is carried out in full, as the unsigned trail allowed; a control
then trusts the attacker's own key, and the rewritten root verifies, showing that the attack itself was
faithful and that the signature (or the witness) is what catches it."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks import audit, keys
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.publish import load_manifest
from tests.conftest import base_spec, census

# three real releases build the template (about 20 s): behind the slow marker, which .ci/run runs; make test keeps
# tests/test_audit.py and the release flow's audit checks
pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]
runner = CliRunner()


def ppdp(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def template(tmp_path_factory, prefect_harness):
    """Two published releases (a pending entry and its completing published entry each) and one refused run under
    one root, signed by the template's own default key."""
    base = tmp_path_factory.mktemp("audit-attacks")
    root, config = base / "root", base / "config"
    census(400).to_csv(base / "census.csv", index=False)
    spec = base / "spec.yaml"
    spec.write_text(yaml.safe_dump(base_spec(base / "census.csv", root)), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PPDP_CONFIG_DIR", str(config))
        # the second release is of another dataset, the same records with the same seed: the same groups, so the
        # series gate (which follows the records whatever the dataset's name) publishes it; another seed would be
        # refused (its groups intersected with the first's)
        for args in ([], ["--set", "dataset=census_b"], ["--set", "privacy.max_linkage_risk=0"]):
            result = ppdp("run", spec, *args)
            assert result.exit_code in (0, 3), result.output
        assert audit.verify(root) == []
    return base


@pytest.fixture
def site(template, tmp_path, monkeypatch):
    """A private copy of the template's root and configuration folder (key and local witness)."""
    shutil.copytree(template / "root", tmp_path / "root")
    shutil.copytree(template / "config", tmp_path / "config")
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(tmp_path / "config"))

    class Site:
        root = tmp_path / "root"
        config = tmp_path / "config"
        entries = audit.list_entries(tmp_path / "root")
        first, second = (Path(tmp_path / "root" / e.dataset / e.release_id) for e in entries if e.status ==
                         "published")

        def findings(self, *args) -> list[str]:
            result = ppdp("audit", "verify", "--root", self.root, *args)
            assert "Traceback" not in result.output
            lines = result.stderr.splitlines()
            assert (result.exit_code == 1) == bool(lines), result.output
            assert all(line.startswith("ppdp: audit: ") for line in lines)
            return [line.removeprefix("ppdp: audit: ") for line in lines]

    assert [e.status for e in Site.entries] == ["pending", "published", "pending", "published", "rejected"]
    return Site()


def attacker_key(tmp_path) -> keys.SigningKey:
    path = tmp_path / "attacker.pem"
    path.write_bytes(Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return keys.load_key_file(path)


def rechain(root: Path, edit, signer: keys.SigningKey | None = None) -> None:
    """Everything a writer of the root can do to the database: edit rows, recompute every entry hash and
    previous-entry hash, rewrite the head; with ``signer`` (the attacker's own key) also re-sign."""
    with sqlite3.connect(root / "audit.db") as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM entries ORDER BY seq")]
        rows = edit(rows) or rows
        prev = audit.GENESIS
        for row in rows:
            row["prev_hash"] = prev
            if signer is not None:
                row["key_id"] = signer.key_id
            row["entry_hash"] = audit.compute_hash(row)
            if signer is not None:
                row["signature"] = signer.sign(audit.signed_message(row["entry_hash"]))
            prev = row["entry_hash"]
        conn.execute("DELETE FROM entries")
        cols = list(rows[0])
        conn.executemany(f"INSERT INTO entries ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                         [[r[c] for c in cols] for r in rows])
        conn.execute("UPDATE head SET seq = ?, entry_hash = ?", (rows[-1]["seq"], rows[-1]["entry_hash"]))


def trust_only(monkeypatch, site, key_path: Path | None = None) -> None:
    """Verify as an auditor elsewhere: no local witness, trusting the publisher's key (and ``key_path``)."""
    trusted = [str(site.config / "audit-key.pem")] + ([str(key_path)] if key_path else [])
    monkeypatch.setenv("PPDP_AUDIT_TRUSTED_KEYS", os.pathsep.join(trusted))
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(site.config.parent / "auditor"))


# -- attack 1: edit a row and recompute every later hash ------------------------------------------------------
def test_edit_a_row_and_rechain(site, tmp_path, monkeypatch):
    def hide_refusal(rows):
        rows[4]["status"], rows[4]["reason"] = "error", "disk full"
    rechain(site.root, hide_refusal)
    found = site.findings()
    rid = site.entries[4].release_id
    # the chain is faithful (no hash or chain finding): only the signature and the witness catch it
    assert found == [f"audit.db: entry 5 (release {rid}): contents altered (signature invalid)",
                     f"audit.db: entry 5 (release {rid}): trail forked or rewritten: differs from the local witness "
                     f"{keys.witness_path(site.entries[0].trail_id)}"]
    # an attacker who signs with a key of their own is named too
    rechain(site.root, lambda rows: None, signer=attacker_key(tmp_path))
    found = site.findings()
    assert found[0].startswith("audit.db: entry 1 (release ") and "signed by an unknown key ed25519:" in found[0]
    assert found[1:3] == [f"audit.db: entry {i} (release {site.entries[i - 1].release_id}): signed by the same "
                          "unknown key" for i in (2, 3)]
    # control: trusting the attacker's key (and no witness), the rewritten trail verifies
    trust_only(monkeypatch, site, tmp_path / "attacker.pem")
    assert site.findings() == []


# -- attack 2: delete the newest entry with its release and rewind the head row ----------------------------------
def test_delete_the_newest_entry_with_its_release_and_rewind_the_head(site, monkeypatch):
    head = ppdp("audit", "head", "--root", site.root).output  # stored elsewhere by the operator
    rechain(site.root, lambda rows: rows[:2])  # drop entries 3 to 5: the second release and the refusal
    shutil.rmtree(site.second)
    (site.second.parent / "LATEST").unlink()  # and its dataset's pointer to it (else verify names it too)
    assert site.findings() == ["audit.db: trail rewound or truncated: the local witness "
                               f"{keys.witness_path(site.entries[0].trail_id)} records entry 5 but the trail ends "
                               "at entry 2"]
    trust_only(monkeypatch, site)
    assert site.findings() == []  # every remaining signature is valid: a truncation needs a witness
    assert site.findings("--expect-head", head) == [
        "audit.db: trail rewound or truncated: the expected head records entry 5 but the trail ends at entry 2"]


# -- attack 3: swap data.parquet, rewrite the manifest's hashes and re-chain ------------------------------------
def test_swap_the_data_rewrite_the_manifest_and_rechain(site, tmp_path, monkeypatch):
    folder = site.first
    table = pq.read_table(folder / "data.parquet")
    meta = table.schema.metadata
    forged = table.slice(0, table.num_rows // 2)  # half the rows: "fewer records, same release"
    pq.write_table(forged.replace_schema_metadata(meta), folder / "data.parquet")
    manifest = load_manifest(folder).model_copy(update={"output_sha256": file_sha256(folder / "data.parquet"),
                                                        "rows": forged.num_rows})
    (folder / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    from ppdp.tasks.report import render_report  # a careful forger re-renders the report too

    (folder / "report.html").write_text(render_report(folder), encoding="utf-8")
    new_files = {p.name: file_sha256(p) for p in folder.iterdir()}

    def point_at_forgery(rows):
        for row in rows[:2]:  # the pending entry and the published entry completing it
            row["output_sha256"] = manifest.output_sha256
            row["files"] = audit.files_json(new_files)
    rechain(site.root, point_at_forgery)
    found = site.findings()
    label = f"entry 2 (release {folder.name})"
    assert f"audit.db: {label}: contents altered (signature invalid)" in found
    assert not any("data.parquet" in f for f in found)  # the files match the forged list: the signature is the catch
    # control: with the attacker's own key trusted and no witness, the forgery verifies
    rechain(site.root, lambda rows: None, signer=attacker_key(tmp_path))
    trust_only(monkeypatch, site, tmp_path / "attacker.pem")
    assert site.findings() == []
    assert pa.Table.equals(pq.read_table(folder / "data.parquet"), forged.replace_schema_metadata(meta))


# -- attack 4: plant a file in a release folder (and other changes to a folder) ---------------------------------
def test_plant_a_file_in_a_release_folder(site):
    folder, rel = site.first, f"{site.first.parent.name}/{site.first.name}"
    label = f"entry 2 (release {folder.name})"
    (folder / "README.txt").write_text("see also", encoding="utf-8")
    (folder / "extra").mkdir()
    assert site.findings() == [f"{rel}/README.txt: {label}: not in the signed file list (added after publishing)",
                               f"{rel}/extra: {label}: not in the signed file list (added after publishing)"]


def test_remove_replace_or_link_a_release_file(site):
    folder, rel = site.first, f"{site.first.parent.name}/{site.first.name}"
    label = f"entry 2 (release {folder.name})"
    (folder / "manifest.json").unlink()
    data = folder / "data.parquet"
    blob = data.read_bytes()
    data.unlink()
    (site.root.parent / "elsewhere.parquet").write_bytes(blob)
    data.symlink_to(site.root.parent / "elsewhere.parquet")  # same bytes, but not the published file
    assert site.findings() == [f"{rel}/manifest.json: {label}: file is missing (in the signed file list)",
                               f"{rel}/data.parquet: {label}: not a regular file (in the signed file list)"]


def test_a_release_folder_without_its_entry_and_an_entry_without_its_folder(site):
    dataset = site.first.parent
    shutil.copytree(site.first, dataset / "20990101T000000Z-planted0")
    (dataset / "lonely").mkdir()
    (site.root / "notes.txt").write_text("x", encoding="utf-8")
    (site.root / ".staging-20990101T000000Z-deadbeef").mkdir()
    shutil.rmtree(site.second)
    d = dataset.name
    assert site.findings() == [
        f"{site.second.parent.name}/{site.second.name}: entry 4 (release {site.second.name}): release folder is "
        "missing",
        ".staging-20990101T000000Z-deadbeef: staging folder of an interrupted or running publish (no audit entry "
        "covers it)",
        f"{d}/20990101T000000Z-planted0: release 20990101T000000Z-planted0 ({d}) is on disk but has no published "
        "audit entry",
        f"{d}/lonely: release lonely ({d}) is on disk but has no published audit entry",
        "notes.txt: unexpected file in the publish root",
    ]


# -- a damaged manifest: findings naming the entry and the file; show answers in one line -----------------------
@pytest.mark.parametrize(("case", "damage", "finding"), [
    ("not JSON", lambda p: p.write_text("{not json", encoding="utf-8"), "not valid JSON"),
    ("not UTF-8", lambda p: p.write_bytes(b"\xff\xfe{}"), "not valid JSON"),
    ("not the schema", lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "rows": None}),
                                               encoding="utf-8"), "does not match the manifest schema (at rows)"),
    ("unreadable (a folder)", lambda p: (p.unlink(), p.mkdir()), "not a regular file (in the signed file list)"),
    ("dangling link", lambda p: (p.unlink(), p.symlink_to(p.parent / "nowhere")),
     "not a regular file (in the signed file list)"),
])
def test_a_damaged_manifest_is_a_finding(site, case, damage, finding):
    folder = site.first
    damage(folder / "manifest.json")
    rel = f"{folder.parent.name}/{folder.name}/manifest.json"
    found = site.findings()
    assert f"{rel}: entry 2 (release {folder.name}): {finding}" in found, (case, found)
    shown = ppdp("audit", "show", folder.name, "--root", site.root)
    assert "Traceback" not in shown.output
    if case in ("not JSON", "not UTF-8", "not the schema"):
        assert shown.exit_code == 1 and shown.stderr.count("\n") == 1 and "manifest.json cannot be read" in (
            shown.stderr)
    assert ppdp("audit", "list", "--root", site.root).exit_code == 0


def test_an_intact_manifest_of_an_older_schema_is_no_finding(site):
    """A release published by an earlier ppdp (here: a manifest without a field today's schema requires, signed
    by the publisher) still verifies: its bytes are the signed ones."""
    folder = site.first
    data = json.loads((folder / "manifest.json").read_text())
    del data["versions"]
    (folder / "manifest.json").write_text(json.dumps(data), encoding="utf-8")

    def as_published(rows):
        files = json.loads(rows[0]["files"])
        for row in rows[:2]:  # the pending entry and the published entry completing it
            row["files"] = audit.files_json({**files, "manifest.json": file_sha256(folder / "manifest.json")})
    rechain(site.root, as_published, signer=keys.load_key_file(site.config / "audit-key.pem"))
    (site.config / "witness" / f"{site.entries[0].trail_id}.json").unlink()  # the publisher rewrote history here
    assert site.findings() == []


# -- keys from a Prefect Secret block ----------------------------------------------------------------------------
def test_signing_key_from_a_prefect_secret_block(tmp_path, monkeypatch):
    from prefect.blocks.system import Secret

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    Secret(value=pem).save("ppdp-test-audit-key", overwrite=True)
    monkeypatch.setenv("PPDP_AUDIT_KEY_BLOCK", "ppdp-test-audit-key")
    from datetime import UTC, datetime

    audit.append_entry(tmp_path, release_id="r", dataset="d", status="rejected", reason="x",
                       started_at=datetime.now(UTC))
    [entry] = audit.list_entries(tmp_path)
    assert entry.key_id == keys.ed25519_key_id(private.public_key()) and audit.verify(tmp_path) == []
    monkeypatch.setenv("PPDP_AUDIT_KEY_BLOCK", "no-such-block")
    found = audit.verify(tmp_path)
    assert found[0].startswith("audit key: cannot load the audit key from Prefect Secret block 'no-such-block'")
