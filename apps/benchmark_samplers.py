"""Benchmark swcuts' samplers and classical segmenters on a data set.

Usage: python apps/benchmark_samplers.py DATA [-o OUTDIR] [--seconds S] [--limit N]

DATA is a BSDS500 folder (images/, groundTruth/), a BSDS300 folder or a
folder of images with NAME_gt*.png ground truths, e.g. the development
images in ../shared/data/bsds500-train. Every sampler runs for the same
time on every image; the table of mean scores against every annotator is
printed and OUTDIR/report.html shows the rest. Built on the public API only.
"""

import argparse

import swcuts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("-o", "--output", default="benchmark-out")
    ap.add_argument("--samplers", default="swc,gibbs")
    ap.add_argument("--seconds", type=float, default=5.0, help="sampling time per run")
    ap.add_argument("--limit", type=int, default=None, help="only the first N images")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    rows = swcuts.benchmark(args.data, output=args.output, samplers=args.samplers.split(","),
                            time_budget=args.seconds, limit=args.limit, workers=args.workers,
                            resume=True, progress=True)
    if not hasattr(rows, "groupby"):
        raise SystemExit("install pandas to print the table (the results are in "
                         f"{args.output}/results.csv and report.html)")
    ok = rows[rows.status == "ok"]
    table = ok.groupby("method")[["pri", "voi", "covering", "bf", "n_segments", "seconds"]].mean()
    print(table.sort_values("covering", ascending=False).round(3).to_string())
    print(f"\nreport: {args.output}/report.html")


if __name__ == "__main__":
    main()
