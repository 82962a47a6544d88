"""Sweep specs without Spark: validation errors, cell expansion, option paths, chunk plan."""

from __future__ import annotations

import glob
import os
import tomllib

import pytest

from epochsim.cli import main as cli_main
from epochsim.errors import UsageError
from epochsim.sweep.aggregate import wilson
from epochsim.sweep.cells import (
    KeyPathError,
    cell_id,
    expand,
    fingerprint,
    grid_cells,
    param_column,
    plan_chunks,
    set_option,
)
from epochsim.sweep.driver import prepare_out
from epochsim.sweep.rows import table_for, verdict_row
from epochsim.sweep.spec import load_spec
from scenarios.schema import ScenarioError, parse_scenario
from scenarios.toml_text import dumps
from tests.sweep import ROOT, TINY, write_spec

GRID = """
scenarios = ["base.toml"]
seeds = 25
seeds_per_task = 10

[grid]
"protocol.produce_epoch_check" = [false, true]
"mix[0].params.delay_ms" = [200, 800, 1600]
"""


def error_of(spec_path: str) -> str:
    with pytest.raises(UsageError) as info:
        expand(load_spec(spec_path))
    message = str(info.value)
    assert "\n" not in message
    return message


# -- cells -----------------------------------------------------------------------------------

def test_cells_are_the_cartesian_product_in_grid_order(tmp_path):
    spec = load_spec(write_spec(tmp_path, GRID))
    cells = expand(spec)
    assert [c.params for c in cells] == grid_cells(spec.grid)
    assert len(cells) == 6
    assert cells[0].params == {"protocol.produce_epoch_check": False, "mix[0].params.delay_ms": 200}
    assert cells[1].params["mix[0].params.delay_ms"] == 800  # the last key varies fastest
    assert len({c.cell for c in cells}) == 6


def test_cell_ids_are_stable_and_typed():
    assert cell_id({"protocol.produce_epoch_check": False}) == "c35ca0cf0b"
    assert cell_id({"a": 1}) != cell_id({"a": 1.0}) != cell_id({"a": True})
    assert cell_id({"a": 1, "b": 2}) == cell_id({"b": 2, "a": 1})


def test_a_cells_scenario_holds_its_params_and_keeps_the_mixes(tmp_path):
    cells = expand(load_spec(write_spec(tmp_path, GRID)))
    last = cells[-1]
    sc = parse_scenario(last.toml, last.toml_relpath())
    assert sc.name == "tiny"
    assert sc.options.protocol.produce_epoch_check is True
    assert sc.mixes[0]["params"]["delay_ms"] == 1600
    assert len(sc.mixes) == 2
    assert last.toml.startswith(f"# sweep cell {last.cell} of ")


def test_spec_paths_resolve_beside_the_spec(tmp_path, monkeypatch):
    spec_path = write_spec(tmp_path, GRID)
    monkeypatch.chdir(ROOT)
    assert load_spec(spec_path).scenarios[0].path == os.path.join(str(tmp_path), "base.toml")


def test_shipped_specs_expand():
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios", "sweeps", "*.toml"))):
        spec = load_spec(path)
        assert expand(spec), path


# -- option paths ----------------------------------------------------------------------------

def test_set_option_paths():
    doc = tomllib.loads(TINY)
    assert set_option(doc, "producers.0.acks", "all") == 1
    assert set_option(doc, "mix[1].every_ms", 900) == 1
    assert set_option(doc, "cluster.brokers", 5) == 1  # creates the missing [cluster] table
    assert set_option(doc, "mix.*.duration_ms", 100) == 1  # only mixes that have the key
    assert doc["producers"][0]["acks"] == "all" and doc["mix"][1]["every_ms"] == 900
    assert doc["cluster"] == {"brokers": 5}
    assert doc["mix"][0]["duration_ms"] == 100 and "duration_ms" not in doc["mix"][1]


@pytest.mark.parametrize("key, needle", [
    ("producers.3.acks", "no item 3 in producers"),
    ("producers[3].acks", "no item 3 in producers"),
    ("producers.acks", "no item acks in producers"),
    ("producers.*", "every element"),
    ("faults.*.delay_ms", "faults is not an array of tables"),
    ("mix.*.nope", "no element of the array holds"),
])
def test_set_option_errors(key, needle):
    with pytest.raises((KeyPathError, ScenarioError)) as info:
        set_option(tomllib.loads(TINY), key, 1)
    assert needle in str(info.value)


def test_emitter_round_trips_the_scenario_library():
    files = glob.glob(os.path.join(ROOT, "scenarios", "**", "*.toml"), recursive=True)
    assert files
    for path in files:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        assert tomllib.loads(dumps(data)) == data, path


# -- validation ------------------------------------------------------------------------------

@pytest.mark.parametrize("body, needle", [
    ('scenarios = ["base.toml"]\nseed = 3\n', "seed: unknown key; did you mean 'seeds'?"),
    ("seeds = 3\n", "scenarios: missing"),
    ('scenarios = ["nope.toml"]\n', "scenarios[0]: 'nope.toml' not found"),
    ('scenarios = ["base.toml"]\nseeds = 0\n', "seeds: 0 is below 1"),
    ('scenarios = ["base.toml"]\nseeds = 2\nfirst_seed = 9007199254740992\n',
     "first_seed: seeds 9007199254740992..9007199254740993 pass 9007199254740992"),
    ('scenarios = ["base.toml"]\n[grid]\n"protocl.profile" = ["2.5"]\n',
     "grid.protocl.profile: 'protocl' is not a sweepable scenario key; did you mean 'protocol'?"),
    ('scenarios = ["base.toml"]\n[grid]\n"protocol.profile" = ["9.9"]\n',
     "grid.protocol.profile: value \"9.9\" is not valid for"),
    ('scenarios = ["base.toml"]\n[grid]\n"protocol.profile" = []\n', "empty list of values"),
    ('scenarios = ["base.toml"]\n[grid]\n"protocol.profile" = "2.5"\n', "expected an array"),
    ('scenarios = ["base.toml"]\n[grid]\n"cluster.brokers" = [3, 3]\n', "listed twice"),
    ('scenarios = ["base.toml"]\n[grid]\n"producers.2.acks" = [1]\n', "no item 2 in producers"),
    ('scenarios = ["base.toml"]\n[grid]\n"consumers.0.topic" = ["t"]\n', "grid.consumers.0.topic"),
    ('scenarios = ["base.toml"]\n[grid]\n"name" = ["x"]\n', "not a sweepable"),
    ('scenarios = ["base.toml"]\n[grid]\n"faults.*.delay_ms" = [1]\n', "grid.faults.*.delay_ms"),
    ('scenarios = ["base.toml"]\n[grid]\n"run.settle_ms" = [500, 2500]\n'
     '"run.duration_ms" = [2000, 3000]\n', "grid cell (run.settle_ms = 2500, run.duration_ms = "
     "2000) is not a valid"),
    ("scenarios = [\n", "invalid TOML"),
    # overlapping keys: one was dropped, or cells labelled 1 and 2 both ran 3
    ('scenarios = ["base.toml"]\n[grid]\n"run.duration_ms" = [3000]\n'
     "run = { duration_ms = [4000] }\n",
     "grid.run.duration_ms: given twice, as a quoted dotted key and inside a table"),
    ('scenarios = ["base.toml"]\n[grid]\n"topics[*].partitions" = [1, 2]\n'
     '"topics[0].partitions" = [3]\n',
     "grid.topics[0].partitions: overlaps grid.topics[*].partitions: both can set the same"),
    ('scenarios = ["base.toml"]\n[grid]\n"producers.0.acks" = [1]\n'
     '"producers[0].acks" = [0]\n', "grid.producers[0].acks: overlaps grid.producers.0.acks"),
    ('scenarios = ["base.toml"]\n[grid]\n"network.latency.ms" = [1]\n'
     '"network.latency" = [{ dist = "constant", ms = 2 }]\n',
     "grid.network.latency: overlaps grid.network.latency.ms"),
    # refused before any cell is built: a million cells hung validation with no word
    ('scenarios = ["base.toml"]\n[grid]\n"description" = [%s]\n"run.max_events" = [%s]\n'
     % (", ".join(f'"d{i}"' for i in range(101)), ", ".join(map(str, range(1, 101)))),
     "grid: 10,100 cells x 1 scenario = 10,100 scenarios to build; at most 10,000; list fewer"),
    ('scenarios = ["base.toml"]\nseeds = 10000000\n[grid]\n"run.max_events" = [1, 2]\n',
     "grid: 2 cells x 1 scenario x 10,000,000 seeds = 20,000,000 runs; at most 10,000,000; "
     "lower seeds"),
])
def test_spec_errors_name_the_file_and_key(tmp_path, body, needle):
    path = write_spec(tmp_path, body)
    message = error_of(path)
    assert message.startswith(path), message
    assert needle in message, message


def test_grid_keys_on_distinct_options_do_not_overlap(tmp_path):
    spec = load_spec(write_spec(tmp_path, 'scenarios = ["base.toml"]\n[grid]\n'
                                '"mix[0].every_ms" = [500]\n"mix[1].every_ms" = [700]\n'
                                '"mix.*.params.delay_ms" = [100]\n"network.latency" = '
                                '[{ dist = "constant", ms = 2 }]\n"network.jitter_ms" = [1]\n'))
    assert len(expand(spec)) == 1


def test_nested_grid_tables_are_dotted_keys(tmp_path):
    spec = load_spec(write_spec(tmp_path, 'scenarios = ["base.toml"]\n'
                                "[grid.protocol]\nproduce_epoch_check = [true]\n"))
    assert spec.grid == {"protocol.produce_epoch_check": [True]}


def test_cli_reports_a_bad_spec_in_one_line_with_exit_2(tmp_path, capsys):
    path = write_spec(tmp_path, 'scenarios = ["base.toml"]\n[grid]\n"cluster.brokers" = [0]\n')
    assert cli_main(["sweep", path, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: grid.cluster.brokers:") and "\n" not in err
    assert not (tmp_path / "out").exists()


# -- chunks and the output directory ---------------------------------------------------------

def test_chunks_cover_each_cells_seeds_once_with_stable_ids(tmp_path):
    spec = load_spec(write_spec(tmp_path, GRID))
    cells = expand(spec)
    chunks = plan_chunks(spec, cells)
    assert [(c.lo, c.hi) for c in chunks[:3]] == [(1, 11), (11, 21), (21, 26)]
    assert len(chunks) == 3 * len(cells)
    first = cells[0].cell
    assert chunks[0].id == f"tiny/{first}/s1-10"
    assert chunks[0].relpath() == os.path.join("rows", "scenario=tiny", f"{first}-s1-10.parquet")
    assert len({c.id for c in chunks}) == len(chunks)
    again = plan_chunks(load_spec(spec.path), expand(load_spec(spec.path)))
    assert [c.id for c in again] == [c.id for c in chunks]


def test_fingerprint_changes_with_anything_that_changes_rows(tmp_path):
    path = write_spec(tmp_path, GRID)
    base = fingerprint(load_spec(path), expand(load_spec(path)))
    assert fingerprint(load_spec(path), expand(load_spec(path))) == base
    for seeds, per_task in ((26, None), (None, 7)):
        spec = load_spec(path, seeds, per_task)
        assert fingerprint(spec, expand(spec)) != base


def test_out_dir_is_never_clobbered(tmp_path):
    plan = {"fingerprint": "a"}
    out = str(tmp_path / "out")
    prepare_out(out, resume=False, plan=plan)
    with pytest.raises(UsageError, match="not empty; pass --resume"):
        prepare_out(out, resume=False, plan=plan)
    prepare_out(out, resume=True, plan=plan)
    with pytest.raises(UsageError, match="different spec"):
        prepare_out(out, resume=True, plan={"fingerprint": "b"})
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not a sweep"):
        prepare_out(str(tmp_path / "other"), resume=True, plan=plan)


# -- rows ------------------------------------------------------------------------------------

def test_rows_have_one_schema_whatever_the_values(tmp_path):
    from epochsim.runner import run_scenario

    spec = load_spec(write_spec(tmp_path, GRID))
    cells = expand(spec)
    tables = []
    for cell in (cells[0], cells[-1]):
        verdict = run_scenario(parse_scenario(cell.toml), 3)
        row = verdict_row(verdict, cell.cell, cell.params, "c", 1.0)
        tables.append(table_for([row], spec.grid))
        assert row["trace_digest"] == verdict["trace_digest"]
        assert row[param_column("mix[0].params.delay_ms")] == cell.params["mix[0].params.delay_ms"]
    assert tables[0].schema == tables[1].schema
    assert "p_mix_0_params_delay_ms" in tables[0].schema.names
    assert tables[0].schema.field("inv_stale_leader_append").type == "bool"


def test_wilson_interval():
    low, high = wilson(0, 20)
    assert low == 0.0 and high == pytest.approx(0.1611, abs=1e-4)
    low, high = wilson(9, 20)
    assert (low, high) == (pytest.approx(0.2582, abs=1e-4), pytest.approx(0.6579, abs=1e-4))
    assert wilson(20, 20)[1] == 1.0


@pytest.mark.parametrize("grid", ['"cluster.brokers" = [1979-05-27]',
                                  '"cluster.request_service_us" = [99999999999999999999]'])
def test_grid_values_no_scenario_can_hold_are_refused(tmp_path, capsys, grid):
    path = write_spec(tmp_path, f'scenarios = ["base.toml"]\n[grid]\n{grid}\n')
    assert cli_main(["sweep", path, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:") and "\n" not in err


def test_resume_refuses_an_unreadable_plan(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "plan.json").write_bytes(b"\xff not json")
    with pytest.raises(UsageError, match="plan.json: not the plan a sweep writes"):
        prepare_out(str(out), resume=True, plan={"fingerprint": "a"})
    assert (out / "plan.json").read_bytes() == b"\xff not json"


def test_a_malformed_master_url_is_a_usage_error(tmp_path, capsys):
    path = write_spec(tmp_path, 'scenarios = ["base.toml"]\n')
    assert cli_main(["sweep", path, "--master", "foo://bar", "--out", str(tmp_path / "o")]) == 2
    assert "not a Spark master URL" in capsys.readouterr().err


@pytest.mark.parametrize("existing", [False, True], ids=["new-out", "empty-out"])
def test_a_master_spark_cannot_start_on_is_one_line_and_leaves_out_as_it_was(
        tmp_path, capsys, monkeypatch, existing):
    # as SparkContext fails with --master yarn on a machine without Hadoop (after a second)
    # or spark://host:1 (after a minute): it was a 26-line traceback, and cells/ and plan.json
    # stayed behind, so the same command was then refused as "not empty"
    import pyspark.java_gateway

    def no_gateway(*args, **kwargs):
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending "
                           "its port number.")

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", no_gateway)
    path = write_spec(tmp_path, 'scenarios = ["base.toml"]\nseeds = 1\n')
    out = tmp_path / "o"
    if existing:
        out.mkdir()
    assert cli_main(["sweep", path, "--master", "yarn", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --master yarn: Spark could not start ([JAVA_GATEWAY_EXITED] Java "
                   "gateway process exited before sending its port number.); check the master "
                   "URL, and that this machine can reach it"), err
    assert os.listdir(out) == [] if existing else not out.exists()


def test_the_telling_line_of_a_java_error_is_kept():
    from epochsim.sweep.spark_job import _first_words

    java = Exception("An error occurred while calling None.org.apache.spark.api.java."
                     "JavaSparkContext.\n: java.lang.IllegalStateException: Spark context "
                     "stopped while waiting for backend\n\tat org.apache.spark.SparkContext."
                     "x(SparkContext.scala:1)\n")
    assert _first_words(java) == ("java.lang.IllegalStateException: Spark context stopped "
                                  "while waiting for backend")


def test_overrides_change_every_base_before_the_grid():
    """`sweep --profile/--set`: every cell's scenario holds the override, a grid key still wins,
    and the sweep's fingerprint changes with it (a resume never mixes the two)."""
    from epochsim.sweep.cells import fingerprint
    spec_path = os.path.join(ROOT, "scenarios", "sweeps", "demo.toml")
    plain = load_spec(spec_path)
    changed = load_spec(spec_path, overrides={"protocol.profile": "2.5",
                                              "producers.0.acks": 1,
                                              "protocol.produce_epoch_check": True})
    cells = expand(changed)
    scenarios = [parse_scenario(c.toml, c.toml_relpath()) for c in cells]
    assert all(sc.options.profile == "2.5" and sc.options.producers[0].acks == 1
               for sc in scenarios)
    # the grid wins over --set
    assert [sc.options.protocol.produce_epoch_check for sc in scenarios] == [False, True]
    assert fingerprint(plain, expand(plain)) != fingerprint(changed, cells)
