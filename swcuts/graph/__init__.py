"""The region adjacency graph of the atoms and its edge probabilities q_ij."""
