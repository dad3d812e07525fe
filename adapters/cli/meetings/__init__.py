"""Summarizing meetings beyond one run: a transcript as recorded, batches of them, and evals."""
