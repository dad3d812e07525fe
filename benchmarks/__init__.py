"""Benchmarks of the adapters against the raw OpenAI SDK, side by side in one process (make bench)."""
