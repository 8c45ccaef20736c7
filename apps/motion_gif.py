"""Segment the motion between two frames and write an animated GIF of the result.

Usage:
    python apps/motion_gif.py FRAME1 FRAME2 [-o motion.gif] [--flo flow.flo]
                              [--seconds S] [--rounds N] [--max-displacement 3]
                              [--seed 0] [--frame-seconds 1]

The GIF cycles through four pictures: frame 1, frame 2, the flow (the
velocity of every pixel of frame 2, colour-coded: hue is the direction,
saturation the speed, white is still, black is occluded; the wheel in the
corner is the key) and the moving objects coloured over frame 2 (objects
slower than 1/4 pixel are left uncoloured). --flo also saves the flow as a
Middlebury .flo file. The frames must have the same size; motion of up to
--max-displacement pixels per pyramid level is found (larger frames get a
coarse-to-fine pyramid).
Built on the public API only: swcuts.load_image, swcuts.segment_motion, swcuts.write_flo.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

import swcuts


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def as_rgb8(image):
    """Any grey, RGB or RGBA image as (H, W, 3) uint8."""
    from skimage.util import img_as_ubyte

    image = np.asarray(image)
    if image.dtype.kind == "f":
        image = np.clip(image, 0, 1)
    image = img_as_ubyte(image)
    return np.repeat(image[..., None], 3, axis=2) if image.ndim == 2 else image[..., :3]


def flow_colours(flow, scale=None):
    """The flow as (H, W, 3) uint8: hue = direction, saturation = speed over
    ``scale`` (default: the fastest pixel), white = still, black = unknown."""
    from matplotlib.colors import hsv_to_rgb

    u, v = flow[..., 0], flow[..., 1]
    known = np.isfinite(u) & np.isfinite(v)
    speed = np.where(known, np.hypot(u, v), 0.0)
    scale = scale or max(float(speed.max()), 1e-9)
    hue = (np.arctan2(np.where(known, v, 0), np.where(known, u, 0)) / (2 * np.pi)) % 1.0
    rgb = hsv_to_rgb(np.stack([hue, np.clip(speed / scale, 0, 1), np.ones_like(hue)], axis=-1))
    rgb[~known] = 0
    return np.round(rgb * 255).astype(np.uint8)


def with_key(picture, flow):
    """``picture`` with the colour key (a wheel of velocities) in its top-right corner."""
    r = min(picture.shape[:2]) // 8
    if r < 8:  # too small to read
        return picture
    y, x = np.mgrid[-r:r + 1, -r:r + 1].astype(float)
    disc = np.hypot(x, y) <= r
    speed = np.hypot(flow[..., 0], flow[..., 1])
    top = np.nanmax(speed) if np.isfinite(speed).any() else 1.0
    key = flow_colours(np.stack([x, y], axis=-1) * (top / r), scale=top or 1.0)
    out = picture.copy()
    corner = out[2:2 * r + 3, -2 * r - 3:-2]
    corner[disc] = key[disc]
    return out


def objects_over(frame, objects, velocity):
    """The moving objects (faster than 1/4 pixel) in colour over ``frame``, all objects outlined."""
    from skimage.color import label2rgb
    from skimage.segmentation import mark_boundaries

    moving = np.hypot(velocity[:, 0], velocity[:, 1]) >= 0.25
    shown = np.where(moving[objects], objects, -1)  # -1: not coloured
    tinted = label2rgb(shown, image=frame, bg_label=-1, alpha=0.45, kind="overlay")
    return as_rgb8(mark_boundaries(tinted, objects, color=(1, 1, 1)))


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("frame1", type=Path)
    ap.add_argument("frame2", type=Path)
    ap.add_argument("-o", "--output", type=Path, default=Path("motion.gif"), help="the GIF")
    ap.add_argument("--flo", type=Path, help="also write the flow to this .flo file")
    ap.add_argument("--seconds", type=float, help="time budget of the sampling (default: --rounds only)")
    ap.add_argument("--rounds", type=int, default=12, help="annealing rounds per pyramid level (default 12)")
    ap.add_argument("--max-displacement", type=float, default=3.0, help="pixels per level (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--frame-seconds", type=float, default=1.0, help="how long each picture shows")
    args = ap.parse_args()

    for name, value in (("--seconds", args.seconds), ("--frame-seconds", args.frame_seconds),
                        ("--max-displacement", args.max_displacement)):
        if value is not None and not 0 < value < math.inf:
            ap.error(f"{name} must be a positive number, got {value}")
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    for path, suffix in ((args.output, ".gif"), (args.flo, ".flo")):
        if path is not None and (path.suffix.lower() != suffix or not path.parent.is_dir()):
            ap.error(f"'{path}' must be a {suffix} file in an existing folder")
    try:
        frames = [swcuts.load_image(p) for p in (args.frame1, args.frame2)]
    except swcuts.InputError as exc:
        ap.error(str(exc))
    if frames[0].shape[:2] != frames[1].shape[:2]:
        ap.error(f"the frames differ in size: {frames[0].shape[1]}x{frames[0].shape[0]} and "
                 f"{frames[1].shape[1]}x{frames[1].shape[0]} pixels")
    try:
        res = swcuts.segment_motion(frames[0], frames[1], seed=args.seed, rounds=args.rounds,
                                    time_budget=args.seconds, max_displacement=args.max_displacement)
    except (swcuts.InputError, ValueError) as exc:  # a frame or option segment_motion refuses
        ap.error(" ".join(str(exc).split()))

    import imageio.v3 as iio
    from PIL import Image, ImageDraw

    one, two = as_rgb8(frames[0]), as_rgb8(frames[1])
    objects = f"{res.n_objects} object{'s' * (res.n_objects != 1)}"
    pictures = [(one, "frame 1"), (two, "frame 2"), (with_key(flow_colours(res.flow), res.flow), "flow"),
                (objects_over(two, res.objects, res.object_velocity), objects)]
    gif = []
    for picture, caption in pictures:  # a caption band under each picture
        band = Image.new("RGB", (picture.shape[1], 14), "black")
        ImageDraw.Draw(band).text((3, 1), caption, fill="white")
        gif.append(np.concatenate([picture, np.asarray(band)], axis=0))
    iio.imwrite(args.output, np.stack(gif), extension=".gif", duration=int(1000 * args.frame_seconds),
                loop=0)
    if args.flo is not None:
        swcuts.write_flo(args.flo, res.flow)
    speed = np.hypot(res.flow[..., 0], res.flow[..., 1])
    print(f"{res.n_objects} objects, {res.occluded.mean():.1%} occluded, fastest "
          f"{np.nanmax(speed) if np.isfinite(speed).any() else 0:.2f} px, {res.seconds:.1f} s -> {args.output}"
          + (f", {args.flo}" if args.flo else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
