"""Screenshots of the release report (``report.html``) of every demo spec that runs on the shipped data.

    .venv/bin/python -m benchmarks.report_screenshots [--existing] [--only census_demo,mdav_demo]
        [--width 1280] [--output benchmarks/results]

For each spec under ``examples/`` whose source lies under ``examples/`` (the census demos; specs reading
``../shared/data`` are skipped), run the release with ``ppdp run SPEC`` (or, with ``--existing``, take the newest
release folder under ``<publish root>/<dataset>/``), then save a full-page headless Chromium screenshot of its
``report.html`` as ``benchmarks/results/report_<example>.png``. A folder without ``report.html`` (published before
the report was part of a release) gets one rendered by :func:`ppdp.tasks.report.write_report` into a temporary
folder; the release folder is never written. Needs ``chromium`` (or ``chromium-browser`` / ``google-chrome``) on
the PATH.

``--smoke`` (``make bench-smoke``): census_demo only, its source replaced by 300 of its rows, published into a
temporary root (through the Prefect server at ``PREFECT_API_URL``: the smoke driver starts one for all its
scripts); the screenshot, of the page's top 4,000 px only, goes to a temporary folder.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
RESULTS = Path(__file__).resolve().parent / "results"
SETS: list[str] = []  # --set arguments of ``ppdp run`` (smoke runs: source and publish root)
ROOT: Path | None = None  # the publish root in place of the spec's (smoke runs)
MAX_HEIGHT = 16000  # the browser window's height, in pixels (smoke runs: 4000)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str | None:
    """The first headless-capable Chromium on the PATH, or None."""
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def demo_specs() -> list[Path]:
    """Specs under examples/ whose input lies under examples/ (no ../shared/data needed)."""
    out = []
    for spec in sorted(EXAMPLES.glob("*.yaml")):
        raw = yaml.safe_load(spec.read_text(encoding="utf-8")) or {}
        source = (raw.get("source") or {}).get("path")
        if not source:
            continue
        path = (spec.parent / source).resolve()
        if path.is_file() and EXAMPLES.resolve() in path.parents:
            out.append(spec)
    return out


def newest_release(spec: Path) -> Path | None:
    """The newest release folder (release ids start with their UTC time) of ``spec``'s dataset."""
    raw = yaml.safe_load(spec.read_text(encoding="utf-8"))
    root = ROOT or (spec.parent / raw["publish"]["root"]).resolve()
    folders = sorted(p.parent for p in (root / raw["dataset"]).glob("*/manifest.json"))
    return folders[-1] if folders else None


def run_release(spec: Path) -> Path | None:
    ppdp = Path(sys.executable).with_name("ppdp")
    started = time.perf_counter()
    proc = subprocess.run([str(ppdp), "run", str(spec), *SETS], capture_output=True, text=True, cwd=REPO)
    print(f"  ppdp run {spec.name}: exit {proc.returncode} in {time.perf_counter() - started:.1f} s")
    if proc.returncode != 0:
        print("  " + (proc.stderr.strip().splitlines() or ["(no message)"])[-1])
        return None
    return newest_release(spec)


def screenshot(html: Path, png: Path, width: int = 1280, max_height: int = 16000) -> tuple[int, int]:
    """A full-page screenshot of ``html``: rendered in a ``width`` x ``max_height`` window, the blank bottom (rows
    the colour of the page's last row) cut off. Returns the image size."""
    from PIL import Image

    exe = browser()
    if exe is None:
        raise SystemExit("no chromium on the PATH")
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "full.png"
        subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp}/profile", f"--window-size={width},{max_height}",
                        f"--screenshot={raw}", html.resolve().as_uri()],
                       capture_output=True, timeout=180, check=True)
        with Image.open(raw) as im:
            pixels = np.asarray(im.convert("RGB"))
            blank = (pixels == pixels[-1, 0]).all(axis=(1, 2))
            used = np.nonzero(~blank)[0]
            bottom = int(used.max()) + 24 if used.size else im.size[1]
            im.crop((0, 0, im.size[0], min(bottom, im.size[1]))).save(png, optimize=True)
            return im.size[0], min(bottom, im.size[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--existing", action="store_true", help="use the newest published folder, run nothing")
    parser.add_argument("--only", help="comma-separated spec names (without .yaml)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--output", type=Path, default=RESULTS)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    global ROOT, SETS, MAX_HEIGHT
    if args.smoke:
        ROOT = smoke.workdir() / "releases"
        SETS = ["--set", f"source.path={smoke.census_sample()}", "--set", f"publish.root={ROOT}"]
        args.existing, args.only, args.output = False, "census_demo", smoke.workdir() / "screenshots"
        MAX_HEIGHT = 4000
    from ppdp.tasks.report import REPORT_NAME, write_report

    specs = demo_specs()
    if args.only:
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        specs = [s for s in specs if s.stem in wanted]
    failures = 0
    for spec in specs:
        print(f"{spec.stem}:")
        folder = newest_release(spec) if args.existing else run_release(spec)
        if folder is None:
            print("  no release folder" + (" (run without --existing first)" if args.existing else ""))
            failures += 1
            continue
        png = args.output / f"report_{spec.stem}.png"
        with tempfile.TemporaryDirectory() as tmp:
            html = folder / REPORT_NAME
            if not html.is_file():
                html = write_report(folder, Path(tmp) / REPORT_NAME)
                print(f"  {folder.name} has no {REPORT_NAME}: rendered one outside the folder")
            size = screenshot(html, png, args.width, MAX_HEIGHT)
        print(f"  {folder} -> {png.relative_to(REPO) if REPO in png.resolve().parents else png} "
              f"({size[0]} x {size[1]} px)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
