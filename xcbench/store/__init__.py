"""The result store: run directories, their manifest and fingerprint, JSONL records, the
columns of the tables a run writes, and the catalog of runs."""
