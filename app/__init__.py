"""neardup: near-duplicate document lookup over a Redis MinHash LSH index."""

__version__ = "0.1.0"
