"""The audit trail: hash chain, head record, and verification of published files."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from ppdp.tasks import audit


def fill(root, n=4):
    for i in range(n):
        audit.append_entry(root, release_id=f"r{i}", dataset="d", status="rejected", reason=f"gate {i}",
                           started_at=datetime.now(UTC))


def test_chain_links_and_verifies(tmp_path):
    fill(tmp_path)
    entries = audit.list_entries(tmp_path)
    assert [e.seq for e in entries] == [1, 2, 3, 4]
    assert entries[0].prev_hash == audit.GENESIS
    assert all(b.prev_hash == a.entry_hash for a, b in zip(entries, entries[1:]))
    assert audit.verify(tmp_path) == []


@pytest.mark.parametrize("seq", [2, 4])
def test_deleting_a_row_is_detected(tmp_path, seq):
    fill(tmp_path)
    with sqlite3.connect(tmp_path / "audit.db") as conn:
        conn.execute("DELETE FROM entries WHERE seq = ?", (seq,))
    problems = audit.verify(tmp_path)
    assert problems and any(str(seq - 1) in p or str(seq) in p for p in problems)


def test_editing_a_row_is_detected(tmp_path):
    fill(tmp_path)
    with sqlite3.connect(tmp_path / "audit.db") as conn:
        conn.execute("UPDATE entries SET status = 'published' WHERE seq = 3")
    problems = audit.verify(tmp_path)
    assert any("entry 3" in p and "altered" in p for p in problems)


def test_missing_trail_is_an_error(tmp_path):
    from ppdp.tasks.core.errors import PublishError

    with pytest.raises(PublishError, match="no audit trail"):
        audit.list_entries(tmp_path)
