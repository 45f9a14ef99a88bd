"""From configuration to results: :mod:`.config` (schema-validated config.yaml), :mod:`.cells`
(experiment blocks -> cells, checked at parse time), :mod:`.runner` (one path from a cell to a run,
used by the workflow and the CLI), :mod:`.results` (tidy Parquet with provenance) and
:mod:`.workflow_plan` (what the Snakefile asks: outputs, skipped datasets, per-job resources)."""
