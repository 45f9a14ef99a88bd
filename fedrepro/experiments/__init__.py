"""From configuration to results: :mod:`.config` (schema-validated config.yaml), :mod:`.cells`
(experiment blocks -> cells, checked at parse time), :mod:`.runner` (one path from a cell to a run,
used by the workflow and the CLI), :mod:`.results` (tidy Parquet with provenance), :mod:`.resources` (per-job threads, memory and runtime
requests) and :mod:`.report_markdown` (the build's skipped-outputs and provenance reports). What a paper
builds is asked of :mod:`fedrepro.papers.registry`; which datasets are available, of :mod:`fedrepro.data.plan`."""
