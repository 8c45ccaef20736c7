"""Running kernels: the annealing driver, multi-level annealing, posterior samples and MCMC diagnostics."""
