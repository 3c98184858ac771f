"""``python -m bench`` (``make bench``): hook vs floor, print the table, keep it in docs/reliability/performance.md."""

from __future__ import annotations

import argparse
from pathlib import Path

from .report import publish, table
from .run import ROOT, Config, run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sizes", default="3,16,64", help="shard counts, comma-separated (default 3,16,64)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per case and round (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds per case (default 2)")
    parser.add_argument("--connections", type=int, default=8, help="concurrent connections (default 8)")
    parser.add_argument("--keep", type=Path, help="keep request bodies and scripts in this folder")
    parser.add_argument("--no-publish", action="store_true", help="print only; leave the guide and RESULTS alone")
    args = parser.parse_args(argv)
    config = Config(
        sizes=tuple(int(x) for x in args.sizes.split(",")),
        seconds=args.seconds,
        rounds=args.rounds,
        warmup_seconds=args.warmup,
        connections=args.connections,
    )
    results = run(config, folder=args.keep, progress=True)
    markdown = table(results)
    print(markdown)
    if not args.no_publish:
        print(f"written to {publish(markdown, ROOT).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
