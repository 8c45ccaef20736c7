"""The second stage of the learned boundary detector
(:mod:`swcuts.image.boundary_detector`): cues computed from the first
(local) stage's probability map, read by the second network beside the
local features.

- :func:`spectral_features`: spectral globalization as gPb's sPb (Maire,
  Arbelaez, Fowlkes & Malik 2008), the gradients of the leading
  eigenvectors of a normalised-cuts affinity built on the map: the
  boundaries of large coherent regions, not those inside textures.
- :func:`context_features`: auto-context (Tu 2008): the map itself around
  each pixel (at 8 directions and several distances, pooled so that the
  cues do not depend on the orientation: whether a contour continues on
  both sides, what lies across it, how much boundary there is around), so
  that the second network can use the continuity of contours and the
  density of responses in textures.
"""

from __future__ import annotations

import numpy as np

__all__ = ["spectral_features", "context_features", "context_distances"]


#: Offsets (dy, dx) of the globalization's affinity: every pixel within distance √8 (half of them).
_OFFSETS = ((0, 1), (1, 0), (1, 1), (1, -1), (0, 2), (2, 0), (1, 2), (2, 1), (2, -1), (1, -2), (2, 2), (2, -2))


def spectral_features(prob, n_vectors=8, factor=4, rho=0.1) -> np.ndarray:
    """Spectral globalization of a boundary map, as gPb's sPb (Maire,
    Arbelaez, Fowlkes & Malik 2008): the gradients of the leading
    eigenvectors of a normalised-cuts affinity built on the map.

    The map is max-pooled to a grid of one node per ``factor`` x
    ``factor`` pixels; two nodes within distance √8 have affinity
    exp(−m/ρ), m the largest pooled probability on the segment between them
    (the intervening contour cue). The ``n_vectors`` eigenvectors v_j of
    the generalised problem (D − W) v = λ D v after the constant one
    (ARPACK, a fixed start vector, so the result is deterministic) are
    scaled to unit RMS; their gradient magnitudes g_j are combined as
    sqrt(Σ_j g_j² / √λ_j / Σ_j 1/√λ_j) (scale-free, and unchanged by a
    rotation within an eigenspace), over all of them and over the first
    half, and interpolated back to every pixel.

    Parameters
    ----------
    prob : (H, W) float array
        A boundary probability map (the detector's local one).
    n_vectors : int
    factor : int
    rho : float

    Returns
    -------
    (H, W, 2) float32 array

    Examples
    --------
    >>> import numpy as np
    >>> p = np.full((40, 40), 0.01); p[:, 19:21] = 0.9        # a vertical boundary
    >>> s = spectral_features(p, n_vectors=4, factor=2)
    >>> bool(s[:, 18:22, 0].mean() > 3 * s[:, :10, 0].mean())
    True
    """
    import cv2
    import scipy.sparse as sp
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    p = np.asarray(prob, dtype=np.float64)
    h, w = p.shape
    f = int(factor)
    hh, ww = -(-h // f), -(-w // f)
    q = np.pad(p, ((0, hh * f - h), (0, ww * f - w)), mode="edge").reshape(hh, f, ww, f).max(axis=(1, 3))
    n = hh * ww
    k = int(n_vectors)
    out = np.zeros((h, w, 2), dtype=np.float32)
    if n < k + 3:
        return out
    idx = np.arange(n).reshape(hh, ww)
    rows, cols, vals = [], [], []
    for dy, dx in _OFFSETS:
        y1, x0, x1 = hh - dy, max(0, -dx), ww - max(0, dx)
        if y1 <= 0 or x1 <= x0:
            continue
        m = np.maximum(q[:y1, x0:x1], q[dy:dy + y1, x0 + dx:x1 + dx])
        steps = max(abs(dy), abs(dx))
        for t in range(1, steps):
            iy, ix = int(round(dy * t / steps)), int(round(dx * t / steps))
            m = np.maximum(m, q[iy:iy + y1, x0 + ix:x1 + ix])
        rows.append(idx[:y1, x0:x1].ravel())
        cols.append(idx[dy:dy + y1, x0 + dx:x1 + dx].ravel())
        vals.append(np.exp(-m / rho).ravel())
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    wmat = sp.coo_matrix((np.r_[v, v], (np.r_[r, c], np.r_[c, r])), shape=(n, n)).tocsr()
    d = np.asarray(wmat.sum(axis=1)).ravel()
    dm = sp.diags(1.0 / np.sqrt(d))
    mat = (dm @ wmat @ dm).tocsr()
    if n <= 600:
        mu, vec = np.linalg.eigh(mat.toarray())
        mu, vec = mu[-(k + 1):], vec[:, -(k + 1):]
    else:
        v0 = np.random.default_rng(0).standard_normal(n)
        try:
            mu, vec = eigsh(mat, k=k + 1, which="LA", tol=1e-3, v0=v0)
        except ArpackNoConvergence as e:                      # what converged
            mu, vec = e.eigenvalues, e.eigenvectors
    order = np.argsort(-mu)[1:]                               # drop the constant one (μ = 1)
    lam = np.maximum(1.0 - mu[order], 1e-6)
    vec = vec[:, order] / np.sqrt(d)[:, None]
    grads = np.zeros((len(order), hh, ww), dtype=np.float32)
    for j in range(len(order)):
        u = vec[:, j].reshape(hh, ww)
        u = (u / max(np.sqrt(np.mean(u * u)), 1e-300)).astype(np.float32)
        gx = cv2.Sobel(u, cv2.CV_32F, 1, 0, borderType=cv2.BORDER_REFLECT) / 8.0
        gy = cv2.Sobel(u, cv2.CV_32F, 0, 1, borderType=cv2.BORDER_REFLECT) / 8.0
        grads[j] = gx * gx + gy * gy
    wts = 1.0 / np.sqrt(lam)
    for ch, top in enumerate((len(order), max(len(order) // 2, 1))):
        g = np.tensordot(wts[:top], grads[:top], axes=1) / wts[:top].sum()
        up = cv2.resize(np.sqrt(g).astype(np.float32), (ww * f, hh * f), interpolation=cv2.INTER_LINEAR)
        out[..., ch] = up[:h, :w]
    return out



def context_distances(context) -> tuple:
    """The distances (pixels) of :func:`context_features` for the weights'
    setting ``context``: 2, 4, 8, … up to ``context`` (none if below 2)."""
    out, d = [], 2
    while d <= int(context):
        out.append(d)
        d *= 2
    return tuple(out)


#: Sigmas (pixels) of the Gaussian means of the map in :func:`context_features`.
CONTEXT_SIGMAS = (4.0, 12.0)


def _directions(d):
    """The 8 offsets (dy, dx) at distance ~d, counter-clockwise from east; k and k + 4 are opposite."""
    e = int(round(d / np.sqrt(2.0)))
    return ((0, d), (-e, e), (-d, 0), (-e, -e), (0, -d), (e, -e), (d, 0), (e, e))


def context_features(prob, distances=(2, 4, 8), sigmas=CONTEXT_SIGMAS) -> np.ndarray:
    """Auto-context cues of a boundary map (Tu 2008): the map around each
    pixel, pooled over orientation.

    For each distance d, the map is read at the 8 pixels at distance ~d in
    the directions k·45° (s_0 … s_7, the map's edge value repeated outside
    it). With c_k = min(s_k, s_{k+4}) for the 4 lines through the pixel:
    the continuation max_k c_k (a contour goes on at both sides along the
    best line k*), the value across it max(s_{k*+2}, s_{k*+6}) (what lies
    at both sides of that contour), the mean and the maximum of the 8. Then
    the Gaussian means of the map at each of ``sigmas`` (the density of
    boundary responses around). Every cue is given as log-odds, clipped to
    [1e-4, 1 − 1e-4].

    Parameters
    ----------
    prob : (H, W) float array
        A boundary probability map (the detector's local one).
    distances : sequence of int
    sigmas : sequence of float

    Returns
    -------
    (H, W, 4 len(distances) + len(sigmas)) float32 array

    Examples
    --------
    >>> import numpy as np
    >>> p = np.full((30, 30), 0.01); p[:, 15] = 0.9            # a vertical contour
    >>> c = context_features(p, distances=(4,), sigmas=())
    >>> bool(c[10, 15, 0] > 2), bool(c[10, 15, 1] < -2)          # goes on along it; nothing across it
    (True, True)
    """
    import cv2

    p = np.ascontiguousarray(np.clip(np.asarray(prob, dtype=np.float32), 1e-4, 1 - 1e-4))
    h, w = p.shape
    r = max([int(d) for d in distances] + [1])
    pad = np.pad(p, r, mode="edge")
    out = []
    for d in distances:
        s = np.stack([pad[r + dy:r + dy + h, r + dx:r + dx + w] for dy, dx in _directions(int(d))])
        lines = np.minimum(s[:4], s[4:])
        best = lines.argmax(axis=0)[None]
        across = (best + 2) % 4
        out += [np.take_along_axis(lines, best, 0)[0],
                np.maximum(np.take_along_axis(s[:4], across, 0), np.take_along_axis(s[4:], across, 0))[0],
                s.mean(axis=0), s.max(axis=0)]
    for sg in sigmas:
        out.append(cv2.GaussianBlur(p, (0, 0), float(sg), borderType=cv2.BORDER_REFLECT))
    if not out:
        return np.zeros((h, w, 0), dtype=np.float32)
    c = np.clip(np.stack(out, axis=-1), 1e-4, 1 - 1e-4)
    return np.log(c / (1.0 - c)).astype(np.float32)
