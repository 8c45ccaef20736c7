"""Synthetic data with known ground truth: images, scenes, motion pairs and clustering data."""
