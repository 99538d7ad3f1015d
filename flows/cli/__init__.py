"""The ``ppdp`` command line, one module per command group: :mod:`~ppdp.flows.cli.release` (run, federate,
tune), :mod:`~ppdp.flows.cli.compare`, :mod:`~ppdp.flows.cli.validate` (validate, report),
:mod:`~ppdp.flows.cli.series`, :mod:`~ppdp.flows.cli.audit`, :mod:`~ppdp.flows.cli.server`; the application and
its entry points in :mod:`~ppdp.flows.cli.app`, the shared output in :mod:`~ppdp.flows.cli.output`. The modules
whose work needs numpy and pandas (``release_work``, ``release_summary``, ``comparison``, ``checks``,
``audit_entries``, and the tasks' modules they use) are reached through :mod:`~ppdp.flows.cli.lazy` when a command
runs, Prefect's flows imported by the command itself: ``ppdp --help`` loads none of them."""

from ppdp.flows.cli.app import app, entry, main

__all__ = ["app", "entry", "main"]
