"""The `neardup` command: serve, ingest, query, duplicates, check."""
