"""Helpers shared by the side-by-side benchmarks in bench/ (standard library only)."""
