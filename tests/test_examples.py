"""Every example spec is a valid release spec whose input ships with the repository (or, for the research data
sets, is documented as needing ../shared/data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.sanitize.registry import REGISTRY
from ppdp.tasks.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SPECS = sorted(EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_example_spec_is_valid_and_its_input_is_shipped(path):
    spec = load_spec(path)
    assert isinstance(spec, ReleaseSpec)
    source = (path.parent / spec.source.path).resolve() if not spec.source.path.is_absolute() else spec.source.path
    if "shared" not in source.parts:
        assert source.exists(), f"{path.name}: its input {source} is not shipped"


def test_every_registered_method_has_an_example():
    methods = {load_spec(p).method.name for p in SPECS}
    assert set(REGISTRY) <= methods, f"methods without an example spec: {sorted(set(REGISTRY) - methods)}"
