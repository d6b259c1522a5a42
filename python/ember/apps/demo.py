"""The applications end to end, as `ember demo lr | cnn | resnet` runs them (ember.cli.demo is the command line).

Each run_* function trains or runs the application, compares it with its references and returns one record (a
dict); progress bars on a terminal when asked, PNG plots on request. Nothing here reads from a source checkout.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from .progress import Progress

# Per-dataset defaults for the HELR demo, chosen on the float64 reference (the encrypted run follows it):
# the inner products z.w stay inside the sigmoid's interval over the run, where the cubic is a fair sigmoid.
LR_PRESETS = {
    "breast-cancer": dict(iterations=30, learning_rate=1.0, decay=0.3, sigmoid_interval=16.0),
    "digits-3-8": dict(iterations=20, learning_rate=2.0, decay=0.3, sigmoid_interval=8.0),
    "synthetic": dict(iterations=5, learning_rate=1.0, decay=0.3, sigmoid_interval=8.0),
}


#: Published ResNet-20 (CIFAR-10, one image) latencies, next to which Ember's predicted times are shown.
RESNET20_PUBLISHED = [
    dict(system="Lee et al. ICML'22 (multiplexed parallel convolutions, SEAL)", device="CPU (AMD Threadripper PRO "
         "3995WX)", seconds=2271.0, source="E. Lee et al., Low-Complexity Deep Convolutional Neural Networks on "
         "FHE Using Multiplexed Parallel Convolutions, ICML 2022 (PMLR 162), latency of one image; the abstract "
         "states 4.67x below Lee et al. IEEE Access 2022"),
    dict(system="Lee et al. IEEE Access 2022 (SEAL)", device="CPU", seconds=10602.0,
         source="J.-W. Lee et al., Privacy-Preserving Machine Learning With FHE for Deep Neural Network, "
                "IEEE Access 10, 2022, as compared in ICML'22"),
    dict(system="Cheddar", device="NVIDIA H100", seconds=1.05,
         source="W. Choi, J. Kim, J. H. Ahn, Cheddar: A Swift FHE Library Designed for GPU Architectures, "
                "ASPLOS 2026 (the figure issue 13 quotes)"),
]



def _load(dataset: str, samples: int, features: int, seed: int):
    from . import datasets
    if dataset == "breast-cancer":
        return datasets.breast_cancer()
    if dataset == "digits-3-8":
        return datasets.digits((3, 8))
    if dataset == "synthetic":
        return datasets.synthetic_lr(samples=samples, features=features, seed=seed)
    raise ValueError(f"unknown dataset {dataset!r}")


def run_lr(dataset: str = "breast-cancer", iterations: Optional[int] = None, learning_rate: Optional[float] = None,
           decay: Optional[float] = None, sigmoid_interval: Optional[float] = None, batch_size: Optional[int] = None,
           log_n: int = 16, threads: int = 2, samples: int = 1024, features: int = 255, seed: int = 0,
           insecure: bool = False, png: Optional[str] = None, progress: bool = False, levels: Optional[int] = None,
           bootstrap_options: Optional[dict] = None) -> dict:
    """Train on encrypted data, the float64 twin and scikit-learn on the same split; return the record.

    Parameters
    ----------
    dataset : {"breast-cancer", "digits-3-8", "synthetic"}, optional
        The data set (default "breast-cancer"). "synthetic" trains and tests on all its samples, in one batch
        unless `batch_size` is given.
    iterations, learning_rate, decay, sigmoid_interval : optional
        Hyperparameters overriding the data set's preset (LR_PRESETS).
    batch_size : int, optional
        Samples per mini-batch (default: EncryptedLogisticRegression's; "synthetic": all samples).
    log_n : int, optional
        log2 of the ring degree (default 16).
    threads : int, optional
        Threads of the context (default 2).
    samples, features : int, optional
        The shape of the "synthetic" data set (default 1024 x 255).
    seed : int, optional
        Seed of the split, the synthetic data and the batches (default 0).
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).
    png : str, optional
        A directory to write the training curves into (``lr_<dataset>.png``).
    progress : bool, optional
        Show progress bars (default False).
    levels, bootstrap_options : optional
        EncryptedLogisticRegression's (None: its defaults).

    Returns
    -------
    dict
        The record: accuracies and AUCs (encrypted, float64, scikit-learn), the largest weight difference from
        float64, timings, the sigmoid and the parameters.
    """
    from . import datasets
    LogisticRegression = datasets.sklearn("linear_model").LogisticRegression
    roc_auc_score = datasets.sklearn("metrics").roc_auc_score
    from .logreg import EncryptedLogisticRegression, Float64LogisticRegression, sigmoid_poly, sigmoid_poly_error

    hp = dict(LR_PRESETS[dataset])
    for k, v in dict(iterations=iterations, learning_rate=learning_rate, decay=decay,
                     sigmoid_interval=sigmoid_interval).items():
        if v is not None:
            hp[k] = v
    X, y = _load(dataset, samples, features, seed)
    if dataset == "synthetic":  # the benchmark shape: one batch of all samples, all of them for training
        Xtr, Xte, ytr, yte = X, X, y, y
        batch_size = batch_size or samples
    else:
        Xtr, Xte, ytr, yte = datasets.train_test_split(X, y, seed=seed)

    extra = {k: v for k, v in dict(levels=levels, bootstrap_options=bootstrap_options).items() if v is not None}
    enc = EncryptedLogisticRegression(**hp, batch_size=batch_size, log_n=log_n, threads=threads, insecure=insecure,
                                      random_state=seed, **extra)
    with Progress(progress, f"ember demo lr ({dataset})") as bar:
        def on_iter(t, log):
            bar.advance(f"level {log.levels[-1][0]}, {log.bootstraps} bootstraps, {log.seconds:.1f} s")

        def stage(msg):
            bar.stage(msg, hp["iterations"] if msg == "training" else None)
        enc.fit(Xtr, ytr, progress=on_iter, history=bool(png), stage=stage)
    capacity = 2 * enc.packing_.R
    f64_hist = []
    ref = Float64LogisticRegression(**hp, batch_size=batch_size, random_state=seed).fit(
        Xtr, ytr, capacity=capacity, monitor=lambda t, w: f64_hist.append(w.copy()))
    Xs = enc.scaler_.transform(Xtr)
    sk = LogisticRegression(max_iter=10000).fit(Xs[:, :-1], ytr)
    both = len(np.unique(yte)) == 2
    rec = dict(app="lr", dataset=dataset, samples=int(len(Xtr)), test_samples=int(len(Xte)),
               features=int(enc.packing_.features), padded_features=enc.packing_.F,
               batch_size=enc.packing_.samples, batches=len(enc.batches_), ciphertexts_per_batch=enc.packing_.ciphertexts,
               iterations=enc.log_.iterations, bootstraps=enc.log_.bootstraps,
               accuracy_encrypted=enc.score(Xte, yte), accuracy_float64=ref.score(Xte, yte),
               accuracy_sklearn=float(sk.score(enc.scaler_.transform(Xte)[:, :-1], yte)),
               auc_encrypted=float(roc_auc_score(yte, enc.decision_function(Xte))) if both else None,
               auc_float64=float(roc_auc_score(yte, ref.decision_function(Xte))) if both else None,
               max_weight_error=float(np.abs(enc.weights_ - ref.weights_).max()),
               seconds_per_iteration=enc.log_.seconds / max(1, enc.log_.iterations),
               seconds_per_iteration_amortized=_amortized(enc.log_),
               bootstrap_seconds=enc.log_.bootstrap_seconds, keygen_seconds=enc.keygen_seconds_,
               sigmoid=dict(degree=3, interval=hp["sigmoid_interval"],
                            max_error=sigmoid_poly_error(sigmoid_poly(3, hp["sigmoid_interval"]), hp["sigmoid_interval"])),
               hyperparameters=hp, log_n=log_n, threads=threads, params=enc.params_.to_dict())
    if png:
        _lr_plots(png, dataset, enc, ref, f64_hist, Xtr, ytr, Xte, yte)
        rec["png"] = png
    return rec


def _amortized(log) -> Optional[float]:
    """Return the steady-state seconds per iteration (None when the run did not bootstrap).

    The iterations' own time plus one bootstrap per iterations_per_bootstrap iterations (a short run has fewer
    bootstraps than the steady state).
    """
    if not log.bootstraps:
        return None
    from .logreg import LEVELS_PER_ITERATION
    compute = (log.seconds - log.bootstrap_seconds) / log.iterations
    per_boot = log.bootstrap_seconds / log.bootstraps
    return compute + per_boot / log.iterations_per_bootstrap


def _lr_plots(directory, dataset, enc, ref, f64_hist, Xtr, ytr, Xte, yte):
    import pathlib

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    pos = enc.classes_[1]

    def curves(hist, X, y):
        Xs = enc.scaler_.transform(X)
        s = np.where(np.asarray(y) == pos, 1.0, -1.0)
        loss = [float(np.mean(np.logaddexp(0.0, -s * (Xs @ w)))) for w in hist]
        acc = [float(np.mean((Xs @ w > 0) == (s > 0))) for w in hist]
        return loss, acc

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    it = np.arange(1, len(enc.history_) + 1)
    for hist, name, style in ((enc.history_, "encrypted", "-o"), (f64_hist, "float64", "--")):
        loss, _ = curves(hist, Xtr, ytr)
        _, acc = curves(hist, Xte, yte)
        ax[0].plot(it, loss, style, label=name, ms=3)
        ax[1].plot(it, acc, style, label=name, ms=3)
    ax[0].set(xlabel="iteration", ylabel="training log-loss", title=f"HELR on {dataset}")
    ax[1].set(xlabel="iteration", ylabel="test accuracy")
    for a in ax:
        a.legend()
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(d / f"lr_{dataset}.png", dpi=120)
    plt.close(fig)


def run_cnn(images: Optional[int] = None, batch: int = 1, threads: int = 2, seed: int = 0, png: Optional[str] = None,
            progress: bool = False, epochs: Optional[int] = None) -> dict:
    """Run the CNN demo: :func:`ember.apps.cnn.run_demo` with these arguments.

    Parameters
    ----------
    images : int, optional
        Test images to classify (default: the whole test split).
    batch : int, optional
        Images per ciphertext (default 1).
    threads : int, optional
        Threads of the context (default 2).
    seed : int, optional
        Seed of the split and the training (default 0).
    png : str, optional
        A directory to write the confusion matrix into.
    progress : bool, optional
        Show progress bars (default False).
    epochs : int, optional
        Training epochs (default: run_demo's, 60).

    Returns
    -------
    dict
        The record ``ember demo cnn --json`` prints.
    """
    from . import cnn
    return cnn.run_demo(images=images, batch=batch, threads=threads, seed=seed, png=png, progress=progress, epochs=epochs)


def run_resnet_block(log_n: int = 16, channels: int = 16, threads: int = 2, seed: int = 0, insecure: bool = False,
                     progress: bool = False, bootstrap_options: Optional[dict] = None) -> dict:
    """Run one ResNet-20 basic block encrypted for real (ember.apps.resnet.run_block) against float64.

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 16).
    channels : int, optional
        The block's channels (default 16).
    threads : int, optional
        Threads of the context (default 2).
    seed : int, optional
        Seed of the random input and weights (default 0).
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).
    progress : bool, optional
        Show a progress bar over the stages (default False).
    bootstrap_options : dict, optional
        Bootstrapping options (default: run_block's).

    Returns
    -------
    dict
        run_block's record (precision, max error, seconds per stage, peak RSS) with each stage's seconds also
        as ``<stage>_s``.
    """
    from . import resnet
    stages = ["keygen", "encrypt", "conv", "bootstrap", "relu", "conv", "bootstrap", "relu", "decrypt"]
    with Progress(progress, "ember demo resnet --block") as bar:
        bar.stage(f"N=2^{log_n}", len(stages))
        started = []

        def on_stage(name):         # a stage starts: the previous one is done
            if started:
                bar.advance(name)
            started.append(name)
        rec = resnet.run_block(log_n=log_n, channels=channels, threads=threads, seed=seed, insecure=insecure,
                               progress=on_stage, bootstrap_options=bootstrap_options)
        bar.advance("done")
    rec.update({f"{k}_s": v for k, v in rec["seconds"].items()})
    return rec


def run_resnet(log_n: int = 16, symbolic: bool = True, platform: str = "paper", progress: bool = False,
               png: Optional[str] = None, costs_files=None, insecure: bool = False) -> dict:
    """Capture ResNet-20 symbolically (ember.graph.programs.resnet) and schedule it.

    Op counts, bootstraps, the scheduler's makespans (naive, HEFT, PEFT) on `platform`, the whole graph on each
    device alone. Device times are MODELLED by the simulator unless a cost table was measured for them (this
    CPU's kernels are calibrated rates).

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 16).
    symbolic : bool, optional
        Must be True (the default): the whole network runs only symbolically.
    platform : str, optional
        The scheduling platform (ember.sched.platform.load_platform; default "paper").
    progress : bool, optional
        Show progress bars (default False).
    png : str, optional
        A directory to write the HEFT schedule's Gantt chart into (``resnet20_heft.png``).
    costs_files : list of str, optional
        Measured cost tables (``ember profile -o``) merged before the rest is modelled.
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).

    Returns
    -------
    dict
        The record: op counts, bootstraps, makespans by algorithm, seconds per device, the comparison with
        published latencies, and notes on where each device's costs come from.

    Raises
    ------
    ValueError
        If `symbolic` is False.
    """
    if not symbolic:
        raise ValueError("give --symbolic (the whole network as a graph) or --block (one "
                         "residual block encrypted for real); the whole network needs 18 bootstrappings and "
                         "more memory than this machine shares")
    from ember.sched.costs import CostTable
    from ember.sched.plan import default_costs, schedule_graph
    from ember.sched.platform import load_platform

    from ..graph.programs.resnet import resnet20, resnet20_expected
    with Progress(progress, "ember demo resnet") as bar:
        bar.stage(f"symbolic capture at N=2^{log_n}")
        t = time.perf_counter()
        g = resnet20(log_n=log_n, insecure=insecure)
        capture_s = time.perf_counter() - t
        plat = load_platform(platform)
        table = CostTable()
        for f in costs_files or []:     # measured tables (ember profile -o); the rest is modelled
            table.merge(CostTable.load(f))
        costs = default_costs(g, plat, table)
        bar.stage("scheduling", 3)
        scheds = {}
        for algo in ("naive", "heft", "peft"):
            s = schedule_graph(g, plat, costs, algo)
            s.validate()
            scheds[algo] = s.makespan
            bar.advance(algo)
    c = g.op_counts()
    e = resnet20_expected()
    single = {m: float(sum(costs.node_seconds(n, m) for n in g.nodes))   # the whole graph on one device
              for m in sorted({d.model for d in plat.devices})}
    modelled = sorted({d.model for d in plat.devices if costs.source(d.model) == "modelled"})
    for m in sorted(table.devices):                 # measured tables beyond the platform's (this CPU: cpu-2t)
        if m not in single and table.source(m) == "measured":
            single[m] = float(sum(table.node_seconds(n, m) for n in g.nodes))
    label = {"cpu": "this CPU (simulator at its calibrated kernel rates)", "cpu-2t": "this CPU, 2 threads",
             "cpu-1t": "this CPU, 1 thread", "h100": "NVIDIA H100", "fpga-u280": "AMD/Xilinx Alveo U280"}
    comparison = [dict(system="Ember (predicted)", device=label.get(m, m), model=m, seconds=v,
                       basis="MODELLED" if m in modelled else "measured per-op costs, summed (one device, serial)")
                  for m, v in single.items()] + [dict(r, basis="published") for r in RESNET20_PUBLISHED]
    rec = dict(app="resnet", program=g.meta.get("program"), log_n=log_n, nodes=len(g), op_counts=c,
               bootstraps=c.get("mod_raise", 0), relus=e["relus"], convolutions=e["convolutions"],
               platform=plat.name, makespan_s=scheds, device_seconds=single, modelled_devices=modelled,
               comparison=comparison,
               note="device times are MODELLED by ember.sim unless measured (modelled_devices); in `comparison`, "
                    "the rows marked published are the papers' own measurements on their machines",
               capture_seconds=capture_s, params=g.meta.get("params"),
               cost_notes={m: costs.note(m) for m in sorted({d.model for d in plat.devices})})
    if png:
        import pathlib
        pathlib.Path(png).mkdir(parents=True, exist_ok=True)
        s = schedule_graph(g, plat, costs, "heft")
        from ember.sched.draw import gantt
        gantt(s, str(pathlib.Path(png) / "resnet20_heft.png"), title=f"ResNet-20 HEFT on {plat.name}",
              ops={n.id: n.op for n in g.nodes})
        rec["png"] = png
    return rec


