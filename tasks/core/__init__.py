"""The core layer: errors, encoding, grouping, nearest neighbours, balanced partitions and hierarchy reading.

Nothing here imports a step module (ingest, tag, tune, sanitize, privacy, utility, publish, audit) or Prefect;
steps and sanitizers build on it.
"""
