"""Image segmentation: options and their defaults, costs, the named image posteriors, segment(), energy() and sample_posterior()."""
