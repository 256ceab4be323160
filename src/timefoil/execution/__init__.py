"""The execution engine: a run's configuration, its plan (items and requests, no model), answering the
plan's requests in batches (locally, across shards or Ray workers), and the stored run it leaves."""
