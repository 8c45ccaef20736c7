"""Two-frame motion segmentation (Barbu & Zhu, section 7): segment_motion() and its flow refinement."""
