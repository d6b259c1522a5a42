"""The one registry of named programs (ember.graph.programs, issue 26 defect 4): one name per program, the same
program whichever layer asks for it (``ember schedule NAME``, ``ember graph NAME``, ``ember.apps.graph_of``), and
no layer above ember.graph adds to it."""
import inspect
import json
import subprocess
import sys
import warnings

import pytest

import ember
from ember.graph import PROGRAMS, graph_of


def _cli_graph(capsys, *argv) -> dict:
    from ember.cli import main
    assert main(["graph", *argv]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_helr_means_one_program_everywhere(capsys):
    """`ember graph helr` (what `ember schedule helr` loads) is the HELR application's graph -- the same op counts
    as ember.apps.graph_of("helr") and ember.graph.graph_of("helr") -- and not the toy program, which has its own
    name. Before, the command line's "helr" was the toy (367 nodes at N = 2^13 against the application's 2004)."""
    cli = _cli_graph(capsys, "helr", "--log-n", "13", "--insecure")
    app = ember.apps.graph_of("helr", log_n=13, insecure=True)
    assert ember.apps.graph_of is graph_of
    assert cli["op_counts"] == app.op_counts() == graph_of("helr", log_n=13, insecure=True).op_counts()
    assert cli["nodes"] == len(app) and app.meta["helr"]["samples"] == 1024       # the application's batch
    toy = _cli_graph(capsys, "lr-toy", "--log-n", "13", "--insecure")
    assert toy["nodes"] != cli["nodes"] and "toy" in toy["meta"]["program"]


def test_registry_names_and_options():
    assert sorted(PROGRAMS) == ["boot", "helr", "lola-cifar", "lola-mnist", "lr-toy", "resnet20"]
    assert len(set(PROGRAMS.values())) == len(PROGRAMS)                 # one builder per name
    with pytest.raises(ValueError, match="unknown program 'vgg'"):
        graph_of("vgg")
    with pytest.raises(ValueError, match=r"program 'lola-mnist' takes no option levels \(its options: log_n"):
        graph_of("lola-mnist", levels=3)
    with pytest.raises(ValueError, match="program 'helr' takes no option momentum"):
        graph_of("helr", log_n=13, insecure=True, momentum=2)
    with pytest.raises(ValueError, match="unknown training option"):
        ember.graph.programs.helr(log_n=13, insecure=True, momentum=2)
    g = graph_of("boot", log_n=12, levels=2, insecure=True, symbolic=True)   # None options: the default
    assert g.meta["program"] == "bootstrapping N=2^12" and g.op_counts()["mod_raise"] == 1
    with pytest.raises(ValueError, match="128-bit"):                  # below the bound only when asked
        graph_of("lola-mnist", log_n=12)


def test_training_defaults_are_the_estimators():
    """The HELR graph is captured at EncryptedLogisticRegression's defaults (helr.TRAINING_DEFAULTS, kept below the
    apps layer): they must agree with the estimator's own."""
    from ember.apps import EncryptedLogisticRegression
    from ember.graph.programs.logreg import TRAINING_DEFAULTS
    sig = inspect.signature(EncryptedLogisticRegression)
    assert {k: sig.parameters[k].default for k in TRAINING_DEFAULTS} == TRAINING_DEFAULTS


def test_no_layer_fills_the_registry_at_import():
    """Importing the applications, the scheduler and the executors changes nothing in the registry, and building a
    named program imports none of them (a fresh interpreter)."""
    code = ("import sys, ember\n"
            "before = dict(ember.graph.PROGRAMS)\n"
            "ember.graph.graph_of('boot', log_n=12, levels=2, insecure=True)\n"
            "assert not any(m.split('.')[1:2] in (['apps'], ['sched'], ['run'], ['cli']) for m in sys.modules\n"
            "               if m.startswith('ember.')), sorted(sys.modules)\n"
            "import ember.apps, ember.sched, ember.run, ember.cli\n"
            "assert ember.graph.PROGRAMS == before\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_old_module_warns_and_points_to_the_toy():
    """ember.sched.programs stays one release, with a DeprecationWarning; its helr_graph was the toy program."""
    sys.modules.pop("ember.sched.programs", None)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        from ember.sched import programs
    assert any(issubclass(x.category, DeprecationWarning) and "lr-toy" in str(x.message) for x in w)
    assert programs.helr_graph is ember.graph.programs.lr_toy_graph
    assert programs.boot_graph is ember.graph.programs.boot_graph
