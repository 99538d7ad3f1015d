"""The distributed release: a table given as a folder of Parquet files (a partitioned table), released partition by
partition on the flow's task runner (Dask workers, or threads), with the same result as one machine where the
method allows.

Plain functions (nothing here imports Prefect); the release flow runs :mod:`.plan`'s steps as tasks, one
per partition where the work is per partition. No task holds more than one partition's rows plus count tables:

* :mod:`.inputs`: the folder's files (:func:`ppdp.tasks.privacy.partitioned.partition_files`, one schema), each
  partition ingested on its own (read, the input suite of Great Expectations, the spec's checks), the input hash
  over every file in a stated order, and each needed column's distinct values with their counts (pass 1);
* :mod:`.rare`: the rare-value rule decided from the merged counts and applied to each partition alike;
* :mod:`.plan`: the release plan over a folder of partitions (the steps that coincide with one table's are
  :mod:`ppdp.tasks.plan`'s);
* :mod:`.methods`: a method runs partitioned through the capability its sanitizer declares
  (:class:`ppdp.tasks.sanitize.partitions.OnPartitions`: generalization and Mondrian, each exact); every other
  method is refused in one line;
* :mod:`.output`: each partition's published rows spread at random over the release's row files (so a file says
  nothing about the input partition a row came from), each file shuffled and written
  (``data/part-00000.parquet``, ...), and the seeded, stratified sample utility is measured on;
* :mod:`.measure`: the privacy claims measured from merged counts over the published files (the path of ``ppdp
  validate FOLDER``, :mod:`ppdp.tasks.privacy.partitioned`), the attacker's view and the safety floor from the
  same counts.
"""
