"""`epochsim sweep`: many seeds x protocol variants on Spark, violation rates and latency surfaces.

Modules, from the input edge to the outputs:
- `spec`: the sweep spec file (scenarios, grid, seeds), validated once, up front;
- cells are edited raw scenario dicts, written back out by `scenarios.toml_text`;
- `cells`: grid cells, their concrete scenario TOML, and the deterministic chunk plan;
- `worker`: runs one chunk of seeds through `epochsim.runner.run_scenario` (on a Spark worker);
- `rows`: the row schema and the atomic, chunk-keyed Parquet writer;
- `traces`: the bounded set of failing runs whose traces are kept;
- `spark_job`: the quiet Spark session and the chunk executor (progress, Ctrl-C);
- `progress`: the stderr progress line;
- `aggregate`: the Spark SQL aggregate job and sweep.json;
- `table`: the summary printed at the end;
- `driver`: one sweep from spec to sweep.json (what `epochsim sweep` calls).
"""
