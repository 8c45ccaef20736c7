"""Issue 35, round 10: how many independent pieces of evidence is a boundary?

Usage: python benchmarks/evidence_correlation.py [--data bsds500-train] [--images 30] [--lags 4]

On the default atoms of each photo (watershed on the learned detector's map,
as ``sample_posterior(model="edges")`` builds them, seed 0) and the learned
same-segment probabilities q of their edges, for every annotator: two atom
edges are *neighbours along a boundary* when they share an atom i, their
other atoms j, k are adjacent (the three meet at a junction) and both edges
are cut by the annotator with j and k in one segment (consecutive edges of
one boundary between two segments), or both are uncut (the three atoms in
one segment: consecutive edges inside a segment). The lag-k correlation
ρ_k of logit q is the Pearson correlation over pairs of the same class at
distance k in that neighbour relation (within a class, so the shared mean
of cut and uncut edges is not counted), per photo, then the median over
photos. The effective number of independent pieces among n correlated ones
is n / (1 + 2 Σ_k ρ_k), the coarsening power γ = 1 / (1 + 2 Σ_k ρ_k) (and
(1 − ρ_1) / (1 + ρ_1) for an AR(1) chain).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def junction_pairs(edges, n):
    """Pairs of edge indices (e, f) sharing one atom whose other atoms are adjacent."""
    index = {(int(a), int(b)): e for e, (a, b) in enumerate(edges)}
    nbrs = [[] for _ in range(n)]
    for e, (a, b) in enumerate(edges):
        nbrs[a].append((int(b), e))
        nbrs[b].append((int(a), e))
    pairs = []
    for i in range(n):
        for x in range(len(nbrs[i])):
            j, e = nbrs[i][x]
            for y in range(x + 1, len(nbrs[i])):
                k, f = nbrs[i][y]
                if (min(j, k), max(j, k)) in index:
                    pairs.append((e, f))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def lag_correlations(x, pairs, edges, labels, lags):
    """ρ_1..ρ_lags of ``x`` over same-class neighbour pairs (module docstring)."""
    m = len(x)
    li, lj = labels[edges[:, 0]], labels[edges[:, 1]]
    cut = li != lj
    e, f = pairs[:, 0], pairs[:, 1]
    same = cut[e] == cut[f]
    both_cut = cut[e] & cut[f]
    # both cut: the same two segments on either side (consecutive along one boundary)
    seg_e = np.sort(np.stack([li[e], lj[e]], 1), 1)
    seg_f = np.sort(np.stack([li[f], lj[f]], 1), 1)
    keep = same & (~both_cut | np.all(seg_e == seg_f, 1))
    e, f = e[keep], f[keep]
    a = sp.coo_matrix((np.ones(len(e)), (e, f)), shape=(m, m)).tocsr()
    a = ((a + a.T) > 0).astype(np.int8)
    out = {"cut": [], "uncut": []}
    reach = sp.identity(m, format="csr", dtype=np.int8)
    seen = reach.copy()
    for _ in range(lags):
        reach = ((reach @ a) > 0).astype(np.int8)
        new = (reach - reach.multiply(seen)).tocoo()
        seen = ((seen + reach) > 0).astype(np.int8)
        r, c = new.row[new.row < new.col], new.col[new.row < new.col]
        for name, cls in (("cut", cut), ("uncut", ~cut)):
            k = cls[r] & cls[c]
            out[name].append((np.corrcoef(x[r[k]], x[c[k]])[0, 1] if k.sum() > 10 else np.nan, int(k.sum())))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="bsds500-train")
    ap.add_argument("--images", type=int, default=30)
    ap.add_argument("--lags", type=int, default=4)
    args = ap.parse_args()
    from swcuts.evaluation.datasets import open_dataset
    from swcuts.image.atoms import majority_labels
    from swcuts.image.prepare import prepare_image
    from swcuts.segmentation.build import build_graph
    from swcuts.segmentation.edge_posterior import edge_weights
    from swcuts.segmentation.options import default_n_atoms

    ds = open_dataset(DATA / args.data)
    rows = {"cut": [], "uncut": []}
    print(f"{'image':>8} {'atoms':>6} {'edges':>6}  rho_1..rho_{args.lags} (cut pairs; uncut pairs)")
    for name in sorted(ds.names, key=int)[: args.images]:
        sample = ds.read(name)
        features, _ = prepare_image(sample.image)
        h, w = features.shape[:2]
        atoms, graph, q, _ = build_graph(features, "watershed", default_n_atoms(h * w), seed=0, edges="learned",
                                         atom_relief="learned")
        x = edge_weights(q, 0.0)
        pairs = junction_pairs(graph.edges, graph.n_vertices)
        per = {"cut": [], "uncut": []}
        for truth in sample.truths:
            r = lag_correlations(x, pairs, graph.edges, majority_labels(np.asarray(truth), atoms),
                                 args.lags)
            for k in per:
                per[k].append([c for c, _ in r[k]])
        for k in per:
            rows[k].append(np.nanmean(per[k], axis=0))
        print(f"{name:>8} {graph.n_vertices:6d} {graph.n_edges:6d}  "
              + " ".join(f"{c:5.2f}" for c in rows["cut"][-1]) + "; "
              + " ".join(f"{c:5.2f}" for c in rows["uncut"][-1]), flush=True)
    for k in rows:
        med = np.nanmedian(rows[k], axis=0)
        q25, q75 = np.nanpercentile(rows[k], [25, 75], axis=0)
        s = float(np.sum(np.clip(med, 0, None)))
        print(f"{k} pairs: median rho_k over photos " + " ".join(f"{m:.3f}" for m in med)
              + " (quartiles " + ", ".join(f"{a:.2f}-{b:.2f}" for a, b in zip(q25, q75)) + ")")
        print(f"  gamma = 1/(1 + 2 sum rho_k) = {1 / (1 + 2 * s):.3f}; AR(1) (1 - rho_1)/(1 + rho_1) = "
              f"{(1 - med[0]) / (1 + med[0]):.3f}")


if __name__ == "__main__":
    main()
