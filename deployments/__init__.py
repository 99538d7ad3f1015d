"""Prefect deployment definitions of the release flow."""
