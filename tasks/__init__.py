"""Release steps as plain functions (no Prefect import here); :mod:`flows` wraps them as Prefect tasks."""
