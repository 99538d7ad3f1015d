"""``ppdp validate`` (any table's privacy, or a published release's claims re-checked) and ``ppdp report``.

The options load nothing heavy (``ppdp validate --help`` imports no numerical package); the measures and
re-checks (:mod:`ppdp.flows.cli.checks`, numpy and pandas) are imported when the command runs."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import typer

from ppdp.flows.cli import lazy
from ppdp.flows.cli.output import DEBUG_HELP, console, fail, internal_error
from ppdp.schemas.privacy import TABLE_GATES, PrivacyThresholds
from ppdp.tasks.core.errors import PpdpError


def gate_options(command):
    """Give ``command`` one option per table gate of the privacy schema (:data:`ppdp.schemas.privacy.TABLE_GATES`),
    after --sa, typed and defaulted as the :class:`~ppdp.schemas.privacy.PrivacyThresholds` field; the values reach
    it in ``**gates``."""
    sig = inspect.signature(command)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    at = [p.name for p in params].index("sa") + 1
    made = []
    for name, (text, metavar) in TABLE_GATES.items():
        field = PrivacyThresholds.model_fields[name]
        kind = str if typing.get_origin(field.annotation) is typing.Literal else field.annotation
        option = typer.Option(field.default, "--" + name.replace("_", "-"), help=text, metavar=metavar or None)
        made.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=option, annotation=kind))
    command.__signature__ = sig.replace(parameters=params[:at] + made + params[at:])
    return command


@gate_options
def validate(
    file: Path | None = typer.Argument(None, metavar="TABLE", help="A CSV or Parquet file, or a folder of Parquet "
                                       "files (a partitioned table); not with --release."),
    qi: str | None = typer.Option(None, "--qi", metavar="COLUMNS", help="The quasi-identifiers, comma-separated."),
    sa: str | None = typer.Option(None, "--sa", metavar="COLUMNS", help="The sensitive attributes, "
                                  "comma-separated."),
    population: Path | None = typer.Option(None, "--population", help="The population table (CSV or Parquet), "
                                           "for --max-journalist-risk and --k-map; with --release: where the "
                                           "population table the release's policy names is now."),
    hierarchy: list[str] = typer.Option([], "--hierarchy", metavar="SA=PATH", help="A generalization hierarchy "
                                        "(ARX's CSV format) of a sensitive attribute given with --sa, for "
                                        "hierarchical t-closeness (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (pyCANON's names for its measures)."),
    sep: str = typer.Option(",", "--sep", help="The CSV separator."),
    na_values: str | None = typer.Option(None, "--na-values", metavar="VALUES", help="CSV cells read as missing, "
                                         "comma-separated."),
    attack: int = typer.Option(0, "--attack", min=0, metavar="N", help="Run paper 002's random-query attacker with "
                               "up to N queries drawn from the table's records (0: no attack)."),
    seed: int = typer.Option(0, "--seed", help="The seed of the random-query attacker."),
    release: Path | None = typer.Option(None, "--release", metavar="DIR", help="A published release folder: "
                                        "re-check every claim of its manifest and its safety floor."),
    original: Path | None = typer.Option(None, "--original", metavar="PATH", help="With --release: the original "
                                         "input, for the claims that compare with it."),
    cluster: str | None = typer.Option(None, "--cluster", metavar="ADDRESS", help="For a folder of Parquet files, "
                                       "or with --release a distributed release's row files: count the partitions "
                                       "on this Dask scheduler (tcp://host:8786), or 'local' for a local Dask "
                                       "cluster."),
    **gates: object,  # the table gates (--k, --l, --t, ...): gate_options
) -> None:
    """Check the privacy of any table, or re-check a published release.

    ppdp validate TABLE --qi COLUMNS with gates (--k, --l, --t, ...) measures a CSV or Parquet file, or a folder of
    Parquet files (a partitioned table), and checks the gates given. ppdp validate --release DIR re-checks a
    published release's claims and safety floor (--original PATH for the claims that compare with the input).

    \b
    Exit codes:
      0  every gate or claim holds
      3  a gate or claim does not hold
      5  every claim holds, but the release was published below the safety floor on purpose
      4  a release claim could not be re-checked (it needs --original, or the population table)
      2  bad input
    """
    if release is not None:
        lazy.checks.validate_release(release, original, as_json, cluster, population)
        return
    if file is None or not qi:
        fail("error: give a table and --qi, or --release DIR", 2)
    lazy.checks.validate_table(file, qi, sa, gates=gates, population=population, hierarchy=hierarchy, as_json=as_json,
                          sep=sep, na_values=na_values, attack=attack, seed=seed, cluster=cluster)


def report(
    release_dir: Path = typer.Argument(..., metavar="DIR", help="A published release folder."),
    out: Path | None = typer.Option(None, "--out", metavar="FILE", help="Write the regenerated report to this file "
                                    "(outside the release folder)."),
    debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP),
) -> None:
    """Regenerate a release's report.html from its folder.

    Says whether the folder's report is up to date, or writes the regenerated report to --out: the signed release
    folder is never written.

    \b
    Exit codes:
      0  up to date, or written to --out
      2  the folder's report differs or is absent (give --out), or bad input
      1  internal error (--debug prints its traceback)
    """
    current = release_dir / lazy.report.REPORT_NAME
    if out is not None and release_dir.resolve() in (out.resolve(), *out.resolve().parents):
        fail(f"error: --out {out} is inside the signed release folder {release_dir}: write it elsewhere", 2)
    try:  # a federated model's page (ppdp federate) re-checks its claims; a release's page is built from its folder
        text = lazy.federated_release.model_report(release_dir)[1] if lazy.federated_release.is_model_folder(
            release_dir) else lazy.report.render_report(release_dir)
        if out is not None:
            lazy.report.write_atomic(out, text)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    except OSError as exc:
        fail(f"error: cannot write {out} ({exc.strerror or type(exc).__name__})", 2)
    except Exception as exc:  # noqa: BLE001 - the message may quote data: print the type only
        internal_error(exc, debug)
    same = current.is_file() and current.read_bytes() == text.encode("utf-8")
    if out is not None:
        state = (("identical to " if same else "differs from ") + str(current)) if current.is_file() else (
            f"{release_dir} has no {lazy.report.REPORT_NAME}")
        console.print(f"report written to {out} ({state})", markup=False)
    elif same:
        console.print(f"{current} is up to date", markup=False)
    else:
        why = "differs from the regenerated report" if current.is_file() else "is absent"
        fail(f"error: {current} {why}; the release folder is signed and is not changed: give --out FILE to write "
             "the regenerated report elsewhere", 2)
