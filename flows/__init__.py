"""Prefect flows that chain the steps, and the ``ppdp`` CLI.

Importing this package changes no setting: every entry point applies Prefect's data-safety settings itself
(:func:`ppdp.flows.settings.apply_settings`)."""
