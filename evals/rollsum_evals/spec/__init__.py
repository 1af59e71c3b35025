"""The harness's front end: a sweep spec from TOML to Units, one module per job.

- `schema`: `SweepSpec`, `ConfigSpec`, `ReadOptions` (what a spec is once read);
- `parse`: `load_spec` / `parse_spec` (TOML -> `SweepSpec`, one line per mistake), `--set`, `--limit`;
- `where`: ``file:line`` of a field, for every error message;
- `params`: a preset config's parameters, checked once against the library's ranges;
- `configs`: a config's preset or memory and summarizer override, checked at the config's key;
- `imports`: components named by import path (trial-constructed, fingerprinted);
- `components`: capability facts of a configuration (offline, free, ...), recorded for readers;
- `expand`: `SweepSpec` -> variants -> Units (`rollsum_evals.units.Unit`).

Nothing is re-exported here: importing one module (a reader needs `components`) loads only
what that module needs, and no module of the package imports the package back (no cycle).
"""
