"""Command bodies: what `timefoil demo`, `ablate`, `inspect`, `prepare`, `check` and `merge` do, over the
execution engine and the reports."""
