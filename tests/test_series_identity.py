"""A series is the same people, whatever the file looks like (issue 30, item 1).

The attack: MDAV k=12 is published, then MDAV k=13 on the same records; intersecting a record's classes in the two
releases leaves fewer than k candidates for most records (recounted here from the input with the sanitizer itself
and Python sets). The composition gate refuses the second release; each ordinary step the issue found to sidestep
it (the columns reordered, a constant column added, the dataset renamed, the series key rotated) must not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.tasks import series
from tests.conftest import census

runner = CliRunner()


def ppdp(*args, env: dict | None = None):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, env=env)


def spec(workspace, data, name: str = "census", identifiers: bool = False, k: int = 12, file: str = "spec.yaml"):
    columns = {"income": "class", "education": {"role": "quasi_identifier", "order": [
        "Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors", "Masters", "Doctorate"]}}
    if identifiers:
        columns.update({"person_id": "identifier", "ssn": "identifier"})
    path = workspace.spec(file, data=data, method={"name": "mdav", "k": k}, privacy={"k": 10}, columns=columns)
    body = yaml.safe_load(path.read_text(encoding="utf-8"))
    body["dataset"] = name
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def input_table(identifiers: bool) -> pd.DataFrame:
    frame = census(600)
    return frame if identifiers else frame.drop(columns=["person_id", "name", "ssn"])


def test_the_attack_is_real_without_the_gate():
    """MDAV k=12 and k=13 on the same rows: a record's candidate set (the records sharing its class in both) is
    below k = 10 for most records (the sanitizer's own row sources: ground truth, no ppdp figure)."""
    from ppdp.api import roles_for
    from ppdp.tasks.sanitize.mdav import Mdav

    frame = input_table(False)
    roles = roles_for(frame, quasi_identifiers=["age", "sex", "zip", "race", "marital_status", "education",
                                                "occupation"], class_column="income")
    classes = []
    for k in (12, 13):
        release = Mdav(k=k, seed=7).sanitize(frame, roles)
        group = np.full(len(frame), -1)
        ids = release.frame[roles.quasi_identifiers].astype(str).agg("|".join, axis=1)
        group[release.row_source] = pd.factorize(ids)[0]
        classes.append(group)
    pairs = pd.Series(list(zip(*classes, strict=True)))
    sizes = pairs.map(pairs.value_counts())
    assert float(np.mean(sizes < 10)) > 0.5


VARIANTS = ["reordered", "constant column", "renamed dataset", "rotated key"]


@pytest.mark.slow  # two to four flow runs per case; .ci/run runs it
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("identifiers", [False, True], ids=["whole record", "declared identifiers"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_an_ordinary_step_does_not_sidestep_the_series(workspace, variant, identifiers, tmp_path):
    frame = input_table(identifiers)
    first = workspace.dir / "first.csv"
    frame.to_csv(first, index=False)
    published = ppdp("run", spec(workspace, first, identifiers=identifiers))
    assert published.exit_code == 0, published.output
    [rid] = [r.release_id for r, _ in series.dataset_releases(workspace.root)]
    changed = frame
    name = "census"
    env = None
    if variant == "reordered":
        changed = frame[list(reversed(frame.columns))]
    elif variant == "constant column":
        changed = frame.assign(country="US")
    elif variant == "renamed dataset":
        name = "census-v2"
    else:
        env = {"PPDP_SERIES_KEY": "9" * 64}
    second = workspace.dir / "second.csv"
    changed.to_csv(second, index=False)
    before = workspace.under_root()
    result = ppdp("run", spec(workspace, second, name=name, identifiers=identifiers, k=13, file="second.yaml"), env=env)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 3 and len(lines) == 1, result.output
    names = {p for p in workspace.under_root() if not p.endswith("audit.db")}
    assert names == {p for p in before if not p.endswith("audit.db")}  # nothing published
    if variant != "rotated key":
        assert f"earlier release {rid}" in lines[0] and "candidate set" in lines[0], lines[0]
        return
    # a rotated key never resets history: refused in one line until the ledger is bound to the new key
    assert "bound to the series key" in lines[0] and "series-rekey" in lines[0], lines[0]
    old = tmp_path / "old-key"
    old.write_text(series.existing_series_key().decode() + "\n", encoding="utf-8")
    rekeyed = ppdp("series-rekey", "--root", workspace.root, "--old-key-file", old, env=env)
    assert rekeyed.exit_code == 0, rekeyed.output
    again = ppdp("run", spec(workspace, second, name=name, identifiers=identifiers, k=13, file="second.yaml"),
                 env=env)
    lines = again.stderr.strip().splitlines()
    assert again.exit_code == 3 and len(lines) == 1 and "candidate set" in lines[0], again.output
    # the same release under the new key is judged as the old one was: k=12 again publishes (nothing new)
    same = ppdp("run", spec(workspace, second, name=name, identifiers=identifiers, k=12, file="third.yaml"), env=env)
    assert same.exit_code == 0, same.output
