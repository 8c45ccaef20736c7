"""Train the boundary detector's convolutional stage (round 10) with PyTorch
on CPU, and write it into a weights file beside the per-pixel networks.

Usage: python benchmarks/train_boundary_conv.py cache [--modes colour,grey]
       python benchmarks/train_boundary_conv.py select --out SCRATCH.npz [--width 16] [--layers 4] ...
       python benchmarks/train_boundary_conv.py ship [--out swcuts/image/boundary_detector.npz]

The convolutional stage (:mod:`swcuts.image.boundary_conv`) reads, at every
pixel, what the detector's global network reads (the local features, the
local map's log-odds, the spectral and auto-context cues) and the global
network's own log-odds; a 1x1 convolution, then dilated 3x3 residual
layers, then a 1x1 to one logit that is added to the global network's
log-odds. It is trained densely, on random crops of per-photo input maps
computed once by the detector's per-pixel stages (``cache``: float16, in
``--scratch``), with the soft-label cross-entropy of every pixel against
the share of annotators with a boundary within 1 px (``train_boundaries.
target``; the per-pixel networks' stratified sample with its weights
estimates the same loss).

``select``: fit on the 30 development photos and val[0:80], print the
log-loss (every pixel), ODS, OIS and AP on val[80:100] beside the weights
file it starts from (the shipped one), never read train-rest. ``ship``:
fit the colour stage on train + val (130) and the grey stage on the same,
and write them with the per-pixel networks of the shipped file into
``--out`` (format version 4). Needs ``pip install swcuts[train]`` (torch);
inference does not.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from train_boundaries import SELECT, SELECT_FIT, TRAIN, as_features, photos, select_ods, target  # noqa: E402

from swcuts.image import boundary_conv as bconv  # noqa: E402
from swcuts.image import boundary_detector as bd  # noqa: E402

SCRATCH = ROOT.parent / "tmp" / "photos10" / "conv-cache"
SEED = 0


def inputs_of(z, det, mode):
    """The conv stage's input map (H, W, C) of features ``z``: the global network's inputs and its log-odds."""
    x, g, _ = bd._stage_inputs(z, det, det[mode])
    return np.concatenate([x, g.astype(np.float32)[..., None]], axis=2)


def orientation_of(z, det):
    """The orientation cues of features ``z`` (:func:`boundary_features`)."""
    return bd.boundary_features(z, det, orientation=True)[1]


def cache(args):
    """Per photo and mode: the conv stage's inputs (float16) and the soft target, in ``--scratch``."""
    det = bd.load_detector(args.base)
    for mode in args.modes.split(","):
        out = Path(args.scratch) / mode
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.process_time()
        n = 0
        for split, s in photos(TRAIN):
            f = out / f"{split}-{s.name}.npz"
            o = out.with_name(out.name + "-orientation") / f"{split}-{s.name}.npy"
            if args.orientation and not o.exists():
                o.parent.mkdir(parents=True, exist_ok=True)
                np.save(o, orientation_of(as_features(s.image, mode), det).astype(np.float16))
            if f.exists():
                continue
            x = inputs_of(as_features(s.image, mode), det, mode)
            np.savez(f, x=x.astype(np.float16), t=target(s.truths).astype(np.float16))
            n += 1
        print(f"{mode}: {n} photos cached in {time.process_time() - t0:.0f} CPU s", flush=True)


def load(mode, splits, scratch, orientation=False):
    xs, ts, names = [], [], []
    for spec in splits:
        split, *rng = spec.split(":")
        files = sorted((Path(scratch) / mode).glob(f"{split}-*.npz"), key=lambda p: int(p.stem.split("-")[-1]))
        if rng:
            files = files[int(rng[0]):int(rng[1])]
        for f in files:
            with np.load(f) as z:
                x = z["x"]
                ts.append(z["t"])
            if orientation:                 # [inputs, orientation cues, log-odds], as the detector reads them
                o = np.load(f.parent.with_name(f.parent.name + "-orientation") / f"{f.stem}.npy")
                x = np.concatenate([x[..., :-1], o, x[..., -1:]], axis=2)
            xs.append(x)
            names.append(f.stem)
    return xs, ts, names


def torch_stage(c_in, width, layers, mean, std):
    """The stage as a PyTorch module (its ``arrays()`` are :func:`swcuts.image.boundary_conv.conv_stage`'s)."""
    import torch
    from torch import nn

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
            self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))
            self.inp = nn.Conv2d(c_in, width, 1)
            self.convs = nn.ModuleList(nn.Conv2d(width, width, 3, padding=2 ** i, dilation=2 ** i,
                                                 padding_mode="reflect") for i in range(layers))
            self.head = nn.Conv2d(width, 1, 1)
            self.wg = nn.Parameter(torch.ones(()))
            nn.init.zeros_(self.head.weight)
            nn.init.zeros_(self.head.bias)

        def forward(self, x):
            h = torch.relu(self.inp((x - self.mean) / self.std))
            for c in self.convs:
                h = h + torch.relu(c(h))
            return self.wg * x[:, -1:] + self.head(h)

        def arrays(self):
            def np_(t):
                return t.detach().double().numpy()

            return {"c_mean": np_(self.mean.view(-1)), "c_std": np_(self.std.view(-1)),
                    "c_w0": np_(self.inp.weight[:, :, 0, 0]).T.copy(), "c_b0": np_(self.inp.bias),
                    "c_w": np.stack([np_(c.weight).transpose(2, 3, 1, 0) for c in self.convs]),
                    "c_b": np.stack([np_(c.bias) for c in self.convs]),
                    "c_wo": np_(self.head.weight[0, :, 0, 0]), "c_bo": np_(self.head.bias[0]), "c_wg": np_(self.wg)}

        def calibrate(self, a, b):
            """The output ``a * logit + b`` (a monotone map: the same ranking)."""
            with torch.no_grad():
                self.wg.mul_(a)
                self.head.weight.mul_(a)
                self.head.bias.mul_(a).add_(b)

    return Stage()


def fit(xs, ts, args, log=print):
    # a fit, like the per-pixel networks', is deterministic given its data and arguments (one thread, seeded)
    """The conv stage's arrays (:func:`swcuts.image.boundary_conv.conv_stage`) fitted by Adam on random crops."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(SEED)
    c_in = xs[0].shape[2]
    # standardisation from a sample of pixels of every photo
    sample = np.concatenate([x.reshape(-1, c_in)[rng.choice(x.shape[0] * x.shape[1], 2000, replace=False)]
                             for x in xs]).astype(np.float64)
    mean, std = sample.mean(0), sample.std(0) + 1e-6
    tx = [torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))) for x in xs]        # float16 (C, H, W)
    tt = [torch.from_numpy(t.astype(np.float32)) for t in ts]
    net = torch_stage(c_in, args.width, args.layers, mean, std)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr, weight_decay=0.0)
    steps = args.steps
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.1)
    cs = args.crop
    t0, run, run0 = time.process_time(), [], []
    for step in range(steps):
        bx, bt = [], []
        for _ in range(args.batch):
            k = int(rng.integers(len(tx)))
            _, h, w = tx[k].shape
            y0, x0 = int(rng.integers(h - cs + 1)), int(rng.integers(w - cs + 1))
            a, b = tx[k][:, y0:y0 + cs, x0:x0 + cs].float(), tt[k][y0:y0 + cs, x0:x0 + cs]
            if rng.random() < 0.5:
                a, b = a.flip(-1), b.flip(-1)
            bx.append(a)
            bt.append(b)
        bx, bt = torch.stack(bx), torch.stack(bt)
        m = args.margin                       # the loss away from the crop's mirrored border
        logit = net(bx)[:, 0, m:cs - m, m:cs - m]
        bx, bt = bx[:, :, m:cs - m, m:cs - m], bt[:, m:cs - m, m:cs - m]
        wt = 1.0 + (args.pos_weight - 1.0) * (bt > 0).float() if args.pos_weight != 1 else None
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, bt, weight=wt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        run.append(float(loss.detach()))
        run0.append(float(torch.nn.functional.binary_cross_entropy_with_logits(bx[:, -1], bt)))
        if (step + 1) % 200 == 0:
            log(f"  step {step + 1}/{steps}: crop log-loss {np.mean(run[-200:]):.4f} (the global network's "
                f"{np.mean(run0[-200:]):.4f}; {time.process_time() - t0:.0f} CPU s)", flush=True)
    if args.pos_weight != 1:
        a, b = _platt(net, tx, tt, rng, torch)
        log(f"  calibrated: logit -> {a:.3f} logit + {b:.3f} (every pixel of 2 crops of each training photo)")
        net.calibrate(a, b)
    return net.arrays()


def _platt(net, tx, tt, rng, torch):
    """a, b minimising the unweighted log-loss of sigmoid(a s + b), s the stage's logit, on training pixels."""
    from scipy.optimize import minimize

    s, y = [], []
    cs = 128
    with torch.no_grad():
        for x, t in zip(tx, tt):
            for _ in range(2):
                _, h, w = x.shape
                y0, x0 = int(rng.integers(h - cs + 1)), int(rng.integers(w - cs + 1))
                s.append(net(x[None, :, y0:y0 + cs, x0:x0 + cs].float())[0, 0, 16:-16, 16:-16].numpy().ravel())
                y.append(t[y0 + 16:y0 + cs - 16, x0 + 16:x0 + cs - 16].numpy().ravel())
    s, y = np.concatenate(s).astype(np.float64), np.concatenate(y).astype(np.float64)

    def f(ab):
        z = ab[0] * s + ab[1]
        g = 1.0 / (1.0 + np.exp(-z)) - y
        return float(np.mean(np.logaddexp(0.0, z) - y * z)), np.array([np.mean(g * s), np.mean(g)])

    a, b = minimize(f, [1.0, 0.0], jac=True, method="L-BFGS-B").x
    return float(a), float(b)


def dense_logloss(det, mode, xs, ts, conv=True):
    """Log-loss over every pixel of the photos (``conv`` False: the global network's map)."""
    tot, n = 0.0, 0
    for x, t in zip(xs, ts):
        x = x.astype(np.float32)
        g = x[..., -1].astype(np.float64)
        logit = bconv.conv_stage(x, det[mode]).astype(np.float64) if conv else g
        t = t.astype(np.float64)
        tot += float((np.logaddexp(0.0, logit) - t * logit).sum())
        n += t.size
    return tot / n


def select(args):
    base = bd.load_detector(args.base)
    mode = args.modes.split(",")[0]
    xs, ts, _ = load(mode, SELECT_FIT, args.scratch, args.orientation)
    print(f"{mode}: fit on {len(xs)} photos ({' + '.join(SELECT_FIT)}); width {args.width}, layers {args.layers}, "
          f"crop {args.crop} (margin {args.margin}), batch {args.batch}, steps {args.steps}, lr {args.lr}", flush=True)
    arrays = fit(xs, ts, args)
    det = write(args.out, base, {mode: arrays}, args, "selection run")
    vx, vt, _ = load(mode, SELECT, args.scratch, args.orientation)
    ll0, ll1 = dense_logloss(det, mode, vx, vt, False), dense_logloss(det, mode, vx, vt)
    print(f"SELECT {mode} log-loss every pixel of {SELECT[0]}: shipped {ll0:.4f}, conv {ll1:.4f}", flush=True)
    if not args.skip_ods:
        for label, d in (("conv", det), ("shipped", base)):
            if label == "shipped" and args.skip_base:
                continue
            sc = select_ods(d, mode, SELECT)
            print(f"SELECT {mode} {label}: ODS {sc['ods']:.4f} OIS {sc['ois']:.4f} AP {sc['ap']:.4f}", flush=True)


def write(path, base, stages, args, training):
    """``base``'s per-pixel networks and ``stages`` (a conv stage per mode; a mode without one gets the
    identity stage: zero head) written to ``path``; returns the loaded detector."""
    modes = {}
    for mode in ("colour", "grey"):
        arrays = {k: v for k, v in base[mode].items() if not k.startswith("c_")}
        st = stages.get(mode)
        if st is None:                       # the identity stage; with orientation cues, as many as a stage reads
            tiny = np.full((32, 32, 3 if mode == "colour" else 1), 0.5)
            n_ori = bd.boundary_features(tiny, base, orientation=True)[1].shape[2] if args.orientation else 0
            c_in = base[mode]["g_mean"].shape[0] + 1 + n_ori
            st = bconv.identity_stage(c_in, 4, args.layers)
        arrays.update(st)
        modes[mode] = arrays
    settings = {**base["settings"], "conv": args.layers, "conv_orientation": int(args.orientation)}
    bd.save_detector(path, modes, settings, training)
    return bd.load_detector(path)


def ship(args):
    base = bd.load_detector(args.base)
    stages = {}
    for mode in args.modes.split(","):
        xs, ts, _ = load(mode, TRAIN, args.scratch, args.orientation)
        print(f"{mode}: fit on {len(xs)} photos ({' + '.join(TRAIN)})", flush=True)
        stages[mode] = fit(xs, ts, args)
    training = (base["training"] + f"; round 10: convolutional stage ({args.width} channels, {args.layers} dilated "
                f"3x3 residual layers) fitted on {' + '.join(TRAIN)} by benchmarks/train_boundary_conv.py "
                f"(crop {args.crop}, batch {args.batch}, {args.steps} Adam steps, lr {args.lr})")
    write(args.out, base, stages, args, training)
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1024:.1f} KiB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("cache", "select", "ship"))
    ap.add_argument("--modes", default="colour,grey")
    ap.add_argument("--scratch", default=str(SCRATCH))
    ap.add_argument("--base", default=str(bd.DEFAULT_PATH), help="the weights file whose per-pixel networks feed "
                                                                 "the stage")
    ap.add_argument("--out", default=None)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--layers", type=int, default=4, help="dilated layers (dilations 1, 2, 4, ...)")
    ap.add_argument("--crop", type=int, default=96)
    ap.add_argument("--margin", type=int, default=0, help="pixels at each side of a crop outside the loss")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--pos-weight", type=float, default=1.0,
                    help="loss weight of pixels with a positive target (then a monotone recalibration)")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--orientation", action="store_true", help="the stage also reads the orientation cues")
    ap.add_argument("--skip-ods", action="store_true")
    ap.add_argument("--skip-base", action="store_true")
    args = ap.parse_args()
    if args.command == "cache":
        cache(args)
    elif args.command == "select":
        if args.out is None:
            sys.exit("select writes a scratch detector: give --out PATH")
        select(args)
    else:
        args.out = args.out or str(bd.DEFAULT_PATH)
        ship(args)


if __name__ == "__main__":
    main()
