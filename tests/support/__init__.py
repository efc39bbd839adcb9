"""Helpers shared by the tests: the corpus, the oracle, test texts, and real processes."""
