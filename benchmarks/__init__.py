"""Benchmarks: ``make bench`` (import speed against a measured ceiling) and friends."""
