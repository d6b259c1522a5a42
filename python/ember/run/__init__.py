"""Running programs on many processes and machines.

A sketch::

    import ember, ember.run
    ctx = ember.Context(params, threads=1)
    keys = ctx.keygen(rotations=[1])
    cts = [ctx.encrypt(x, keys.public) for x in data]
    with ember.run.LocalPool(ctx, keys, workers=2) as pool:          # K local processes (the default)
        res = pool.map(ember.run.workloads.mul_rotate, cts)
    with ember.run.DaskExecutor(ctx, keys, address="tcp://host:8786") as ex:   # a Dask cluster
        res = ex.run_graph(graph, inputs, schedule=heft_schedule)
    res.outputs, res.node_seconds, res.workers_lost, res.tasks_rerun

Executors (ember.run.executor.Executor): map(fn, cts) (independent tasks fn(ctx, ct)), ``call(fn, *cts)`` (a traced
Python function as one task; profile=True records its evaluator operations), run_graph(graph, inputs, schedule)
(one task per node of a captured ember.graph.Graph; a HEFT/PEFT schedule pins nodes to workers).

Keys (ember.run.keys): the evaluation keys reach each worker once, as bytes in a KeyBundle (a Dask WorkerPlugin,
so workers that join later get them too) or a key directory every worker reads; never with each task. The
secret key never leaves the client: bundles hold evaluation keys only, and a worker refuses a secret key.

Data: ciphertexts travel as Ember's validated byte format, never as pickled C++ objects -- in the local pool
through shared memory (ember.run.shm: written once, read in place, buffers reused; values stay resident on the
worker that made them), on Dask as Packet frames (serializers registered, ember.run.packet). A value that fails
validation is an error naming the node that made it and the node that read it. RunResult.records gives each
task's time besides its operation, and ember.sched.overhead fits the executor's per-task overhead on it.
"""
from .executor import DEFAULT_TIMEOUT, Executor, RunResult  # noqa: F401
from .keys import KeyBundle, SecretKeyRefused, save_eval_keys  # noqa: F401
from .packet import Packet, register_dask_serializers  # noqa: F401
from .pool import LocalPool  # noqa: F401
from .program import Program, Task, TaskError  # noqa: F401
from . import workloads  # noqa: F401


def __getattr__(name):
    if name in ("DaskExecutor", "EmberKeysPlugin"):
        from . import dask_exec
        return getattr(dask_exec, name)
    raise AttributeError(name)


__all__ = ["Executor", "RunResult", "LocalPool", "DaskExecutor", "KeyBundle", "SecretKeyRefused", "save_eval_keys",
           "Packet", "Program", "Task", "TaskError", "DEFAULT_TIMEOUT", "register_dask_serializers", "workloads"]
