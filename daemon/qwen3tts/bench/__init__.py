"""`qwen3tts bench`: speed, latency, memory and the share of the machine's physical limit reached.

Benchmarks are measurements, not tests: nothing here asserts a timing. See docs/benchmarks.md.
"""
