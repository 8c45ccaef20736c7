"""Scoring and comparing: metrics, data sets (real and synthetic), classical peers, the benchmark and its report."""
