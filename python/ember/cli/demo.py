"""`ember demo lr | cnn | resnet`: the applications end to end.

ember.apps.demo runs them and returns a record; here come progress bars on a terminal, PNG plots on request
(--png DIR) and one JSON object as the last line (--json, or always on a pipe).
"""
from __future__ import annotations

import json
import sys
import time
from typing import Optional

from ..apps import demo


def _emit(rec: dict, as_json: bool):
    """Print the record: one JSON line (with as_json or on a pipe), else a table."""
    if as_json or not sys.stdout.isatty():
        print(json.dumps(rec), flush=True)
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"ember demo {rec['app']}")
    t.add_column("field")
    t.add_column("value", justify="right")
    for k, v in rec.items():
        if isinstance(v, dict):
            v = json.dumps(v)
        t.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    Console().print(t)


def boot_options(items) -> Optional[dict]:
    """Parse --bootstrap-option KEY=VALUE strings into a dict of bootstrapping options.

    Parameters
    ----------
    items : list of str or None
        The KEY=VALUE strings; a value is true/false (any case), an integer or a float.

    Returns
    -------
    dict or None
        Option name to value; None when there are no items.

    Raises
    ------
    ValueError
        For an item without '=' or a key, or a value that is not a boolean or a number.
    """
    if not items:
        return None
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--bootstrap-option: expected KEY=VALUE, got {item!r}")
        low = value.strip().lower()
        if low in ("true", "false"):
            out[key] = low == "true"
        else:
            try:
                out[key] = int(value)
            except ValueError:
                try:
                    out[key] = float(value)
                except ValueError:
                    raise ValueError(f"--bootstrap-option {key}: {value!r} is not a boolean or a number") from None
    return out


def _main(args) -> int:
    """Run `ember demo APP`; return the exit status (2 for a ValueError, reported on stderr)."""
    progress = sys.stderr.isatty() and not args.no_progress
    t = time.perf_counter()
    try:
        if args.app == "lr":
            rec = demo.run_lr(dataset=args.dataset, iterations=args.iterations, learning_rate=args.learning_rate,
                              decay=args.decay, sigmoid_interval=args.sigmoid_interval, batch_size=args.batch_size,
                              log_n=args.log_n, threads=args.threads, samples=args.samples, features=args.features,
                              seed=args.seed, insecure=args.insecure, png=args.png, progress=progress,
                              levels=args.levels, bootstrap_options=boot_options(args.bootstrap_option))
        elif args.app == "resnet" and args.block:
            rec = demo.run_resnet_block(log_n=args.log_n, channels=args.channels, threads=args.threads,
                                        seed=args.seed, insecure=args.insecure, progress=progress,
                                        bootstrap_options=boot_options(args.bootstrap_option))
        elif args.app == "resnet":
            rec = demo.run_resnet(log_n=args.log_n, symbolic=args.symbolic, platform=args.platform, progress=progress,
                                  png=args.png, costs_files=args.costs, insecure=args.insecure)
        else:
            rec = demo.run_cnn(images=args.images, batch=args.batch, threads=args.threads, seed=args.seed,
                               png=args.png, progress=progress, epochs=args.epochs)
    except ValueError as e:
        print(f"ember demo {args.app}: {e}", file=sys.stderr)
        return 2
    rec["total_seconds"] = time.perf_counter() - t
    _emit(rec, args.json)
    return 0


def add_parser(sub) -> None:
    """Register `ember demo` on the `ember` command's subparsers.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the ``ember`` parser.
    """
    d = sub.add_parser("demo", help="applications end to end: encrypted logistic-regression training (lr), "
                                    "encrypted CNN inference (cnn), ResNet-20 as a graph (resnet --symbolic) "
                                    "and one of its residual blocks encrypted (resnet --block)")
    d.add_argument("app", choices=["lr", "cnn", "resnet"])
    d.add_argument("--threads", type=int, default=2)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--plot", "--png", dest="png", metavar="DIR", default=None, nargs="?", const=".",
                   help="write PNG plots (loss and accuracy per iteration; the confusion matrix) into DIR (default .)")
    d.add_argument("--json", action="store_true", help="print the record as one JSON line (always on a pipe)")
    d.add_argument("--no-progress", action="store_true", help="no progress bars")
    g = d.add_argument_group("lr")
    g.add_argument("--dataset", choices=sorted(demo.LR_PRESETS), default="breast-cancer",
                   help="synthetic: a generated problem of --samples x --features (HELR's benchmark: 1024 x 255 + bias)")
    g.add_argument("--iterations", type=int, default=None)
    g.add_argument("--learning-rate", type=float, default=None)
    g.add_argument("--decay", type=float, default=None)
    g.add_argument("--sigmoid-interval", type=float, default=None)
    g.add_argument("--batch-size", type=int, default=None)
    g.add_argument("--log-n", type=int, default=16, help="ring dimension (16: 128-bit bootstrapping)")
    g.add_argument("--insecure", action="store_true", help="allow rings below 128-bit security (log-n < 16)")
    g.add_argument("--levels", type=int, default=None,
                   help="computation levels above bootstrapping (default 9: two iterations per bootstrapping)")
    g.add_argument("--bootstrap-option", action="append", metavar="KEY=VALUE",
                   help="a CkksParams.bootstrappable option for training's (and resnet --block's) bootstrapping, "
                        "e.g. arcsin=false")
    g.add_argument("--samples", type=int, default=1024, help="synthetic: samples")
    g.add_argument("--features", type=int, default=255, help="synthetic: features (a bias column is added)")
    c = d.add_argument_group("cnn")
    c.add_argument("--images", type=int, default=None, help="test images to classify encrypted (default: all)")
    c.add_argument("--batch", type=int, default=1, help="images packed per ciphertext (1, 2, 4, 8, 16)")
    c.add_argument("--epochs", type=int, default=None, help="float training epochs")
    r = d.add_argument_group("resnet")
    r.add_argument("--symbolic", action="store_true", help="capture ResNet-20 symbolically (no keys, no arithmetic)")
    r.add_argument("--block", action="store_true",
                   help="run one basic residual block encrypted for real (N = 2^16 by --log-n; ~13 GB) against "
                        "float64: precision, max error, seconds per stage, peak RSS")
    r.add_argument("--channels", type=int, default=16, help="--block: channels (16: ResNet-20's stage 0)")
    r.add_argument("--platform", default="paper", help="scheduler platform (ember schedule --platform)")
    r.add_argument("--costs", action="append", help="cost table JSON (ember profile -o); default: the CPU "
                                                    "modelled from its calibrated profile (this machine's, else the "
                                                    "embedded reference machine's)")
    d.set_defaults(fn=_main)
