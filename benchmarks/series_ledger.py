"""What the series ledger costs as the table grows: fingerprinting, the member files, reading them back, and judging a
release with an earlier one (prints figures; writes ``benchmarks/results/series_ledger.md``).

    .venv/bin/python -m benchmarks.series_ledger --rows 1000000 --rows 10000000 [--chunk 1000000] [--out FILE]

Each size runs in a fresh process (its peak RSS is the kernel's high-water mark of that process alone) and does,
with ppdp's own functions and a seeded synthetic table of 7 quasi-identifiers generated chunk by chunk (a chunk
stands for one partition):

1. ``fingerprint``: :func:`ppdp.tasks.series.fingerprints` of every chunk on the whole-record basis (what each
   partition's recode task does on a worker), rows per second;
2. ``write``: the first release's member files, one per chunk (:func:`ppdp.tasks.series.write_member_file`: fp,
   class, row; sorted by fingerprint), their bytes on disk per record;
3. ``read``: every member file read back (:func:`ppdp.tasks.series.members`' reader);
4. ``judge``: a second release of the same records whose classes are another generalization of them (its pieces on
   disk, as its recode tasks write them), judged with the first as the flow's judge step judges a partitioned
   release: a range of fingerprints at a time (``ppdp.tasks.privacy.series.BUCKET_ROWS`` records), records counted
   by combination of classes, the counts merged, the pair and series figures computed from them.

Figures are wall seconds of one run each (the machine may be loaded: the results file says when it was run and the
load average). ``--smoke``: 20,000 rows in chunks of 5,000, results printed only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "series_ledger.md"
QI = ["age", "sex", "zip", "education", "marital", "race", "occupation"]


def chunk_frame(rng: np.random.Generator, n: int, start: int) -> pd.DataFrame:
    """A chunk of the synthetic table (with a record number, so that records are distinct)."""
    return pd.DataFrame({
        "id_in_file": np.arange(start, start + n),
        "age": rng.integers(17, 91, n), "sex": rng.choice(["F", "M"], n),
        "zip": rng.integers(10000, 10400, n).astype(str), "education": rng.integers(0, 16, n),
        "marital": rng.choice(["married", "single", "divorced", "widowed"], n), "race": rng.integers(0, 5, n),
        "occupation": rng.integers(0, 14, n)})


def classes(frame: pd.DataFrame, coarse: int) -> np.ndarray:
    """A generalization's class ids: age in bands of ``coarse`` years, the full zip (400 values), sex, education in
    bands of 2, marital status (about 100,000 to 400,000 classes, as a k-anonymous recoding of a large table has)."""
    key = (frame["age"].to_numpy() // coarse) * 10_000_000 + frame["zip"].astype(int).to_numpy() * 1_000
    key = key + frame["sex"].eq("F").to_numpy() * 100 + frame["education"].to_numpy() // 2 * 10
    key = key + pd.factorize(frame["marital"], sort=True)[0]
    return key.astype(np.int64)


def measure(rows: int, chunk: int, folder: Path) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ppdp.tasks import series
    from ppdp.tasks.distributed.series import PIECE_ROWS
    from ppdp.tasks.privacy.candidates import count_combos, merge_counts, pair_stats, series_stats
    from ppdp.tasks.privacy.series_figures import sorted_unique as _sorted_unique
    from ppdp.tasks.privacy.series_partitioned import _ranges

    rng = np.random.default_rng(0)
    hash_key = "b" * 16
    fingerprint_s = write_s = 0.0
    first_dir, second_dir = folder / "first", folder / "second"
    second_dir.mkdir(parents=True)
    start = 0
    columns = ["id_in_file", *QI]
    while start < rows:
        n = min(chunk, rows - start)
        frame = chunk_frame(rng, n, start)
        t = time.perf_counter()
        fp = series.fingerprints(frame, columns, hash_key)
        fingerprint_s += time.perf_counter() - t
        t = time.perf_counter()
        series.write_member_file(pd.DataFrame({"part": "", "fp": fp, "grp": classes(frame, 10), "row": -1}),
                                 first_dir / f"part-{start // chunk:05d}.parquet")
        write_s += time.perf_counter() - t
        piece = pa.table({"fp": fp, "grp": classes(frame, 5)})  # the second release's piece, as a recode task writes
        piece = piece.take(pa.array(np.argsort(fp, kind="stable")))
        pq.write_table(piece, second_dir / f"part-{start // chunk:05d}.parquet", row_group_size=PIECE_ROWS)
        start += n
    disk = sum(p.stat().st_size for p in first_dir.glob("*.parquet"))
    t = time.perf_counter()
    for p in sorted(first_dir.glob("*.parquet")):
        pq.read_table(p, schema=series.MEMBER_SCHEMA)
    read_s = time.perf_counter() - t
    # the judgement as judge_partitioned runs it: a range of fingerprints at a time, counts merged
    t = time.perf_counter()
    tables = []
    for lo, hi in _ranges(rows):
        filters = series.fp_filters((lo, hi)) or None
        cur = pa.concat_tables([pq.read_table(p, filters=filters) for p in sorted(second_dir.glob("*.parquet"))])
        old = pa.concat_tables([pq.read_table(p, filters=filters, columns=["fp", "grp"])
                                for p in sorted(first_dir.glob("*.parquet"))])
        fp, grp = _sorted_unique(cur.column("fp").to_numpy(), cur.column("grp").to_numpy())
        tables.append(count_combos(fp, grp, [_sorted_unique(old.column("fp").to_numpy(),
                                                            old.column("grp").to_numpy())]))
    table = merge_counts(tables)
    pair = pair_stats(table, 0, 10)
    stats = series_stats(table, 1, 10)
    judge_s = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rows": rows, "fingerprint_s": fingerprint_s, "fingerprint_rows_per_s": rows / fingerprint_s,
            "write_s": write_s, "bytes_per_record": disk / rows, "disk_mib": disk / 2**20, "read_s": read_s,
            "judge_s": judge_s, "peak_mib": peak, "common": pair.common, "combinations": len(table),
            "figure": stats.below / max(stats.involved, 1)}


def run_size(rows: int, chunk: int) -> dict:
    """:func:`measure` in a fresh process (its own peak RSS)."""
    with tempfile.TemporaryDirectory(prefix="ppdp-ledger-bench-") as tmp:
        out = subprocess.run([sys.executable, "-m", "benchmarks.series_ledger", "--one", str(rows), "--chunk",
                              str(chunk), "--folder", tmp], capture_output=True, text=True, cwd=REPO, check=False)
        if out.returncode:
            raise SystemExit(f"size {rows}: {out.stderr.strip().splitlines()[-1] if out.stderr else 'failed'}")
        return json.loads(out.stdout.strip().splitlines()[-1])


def results_text(results: list[dict]) -> str:
    load = os.getloadavg()
    lines = ["# The series ledger's cost", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python -m benchmarks.series_ledger` "
             f"on a {os.cpu_count()}-core machine (load average at the end {load[0]:.2f}); one run per size, one "
             "process each (see the script's docstring for what each figure times).", "",
             "| records | fingerprint (rows/s) | member files | bytes/record | write | read | judge (pair + series) | "
             "peak RSS |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['rows']:,} | {r['fingerprint_rows_per_s']:,.0f} | {r['disk_mib']:,.1f} MiB | "
                     f"{r['bytes_per_record']:.1f} | {r['write_s']:.1f} s | {r['read_s']:.1f} s | "
                     f"{r['judge_s']:.1f} s | {r['peak_mib']:,.0f} MiB |")
    lines += ["", "Fingerprinting runs on the workers, one partition per task (its cost divides by the workers); the "
              "member files are written by the same tasks; the read and the judgement run in the flow's process, "
              "one range of fingerprints at a time, so its memory is a range's records and the count table (one "
              "row per combination of classes), not the table's records."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append")
    parser.add_argument("--chunk", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.chunk, args.folder)))
        return
    sizes, chunk = (args.rows or [1_000_000, 10_000_000]), args.chunk
    if args.smoke:
        sizes, chunk = [20_000], 5_000
        print("smoke input: a generated table of 20,000 records in 4 chunks")
    results = []
    for rows in sizes:
        r = run_size(rows, chunk)
        results.append(r)
        print(f"{rows:>12,} records: {r['combinations']:,} combinations, fingerprint "
              f"{r['fingerprint_rows_per_s']:,.0f} rows/s, member files "
              f"{r['disk_mib']:,.1f} MiB ({r['bytes_per_record']:.1f} B/record), write {r['write_s']:.1f} s, read "
              f"{r['read_s']:.1f} s, judge {r['judge_s']:.1f} s, peak {r['peak_mib']:,.0f} MiB")
    text = results_text(results)
    if args.smoke:
        print(text)
        return
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
