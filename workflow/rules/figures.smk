# Figures (PDF + PNG) and tables (Markdown, CSV, LaTeX) with the IDs of the papers' specs,
# plus generic plots of custom experiments.


def figure_inputs(wc):
    return [f"results/{wc.paper}/{e}{suffix}" for e in papers.figure_experiments(wc.paper, wc.fig, SKIPPED, CELLS)
            for suffix in (".parquet", ".summary.parquet")]


rule figure:
    input:
        figure_inputs,
    output:
        pdf="figures/{paper}/{fig}.pdf",
        # the report shows the PNG inline (Chromium shows no PDF inside the report's frame)
        png=report("figures/{paper}/{fig}.png", category="{paper}", subcategory="figures",
                   caption="../report/figure.rst"),
    log:
        "logs/figures/{paper}/{fig}.log",
    params:
        experiments=lambda wc: papers.figure_experiments(wc.paper, wc.fig, SKIPPED, CELLS),
    wildcard_constraints:
        paper="|".join(papers.PAPERS),
        fig=papers.id_pattern(OUTPUTS, "figure"),
    script:
        "../scripts/figure.py"


rule table:
    input:
        figure_inputs,
    output:
        md="figures/{paper}/{fig}.md",
        csv="figures/{paper}/{fig}.csv",
        tex="figures/{paper}/{fig}.tex",
        # the report shows HTML inline; Markdown/CSV it only offers as data: links Chromium will not open
        html=report("figures/{paper}/{fig}.html", category="{paper}", subcategory="tables",
                    caption="../report/table.rst"),
    log:
        "logs/figures/{paper}/{fig}.log",
    params:
        experiments=lambda wc: papers.figure_experiments(wc.paper, wc.fig, SKIPPED, CELLS),
    wildcard_constraints:
        paper="|".join(papers.PAPERS),
        fig=papers.id_pattern(OUTPUTS, "table"),
    script:
        "../scripts/figure.py"


rule custom_plots:
    input:
        trace="results/custom/{experiment}.parquet",
        summary="results/custom/{experiment}.summary.parquet",
    output:
        rounds="figures/custom/{experiment}_rounds.pdf",
        rounds_png=report("figures/custom/{experiment}_rounds.png", category="custom"),
        sweep="figures/custom/{experiment}_sweep.pdf",
        sweep_png=report("figures/custom/{experiment}_sweep.png", category="custom"),
    log:
        "logs/figures/custom/{experiment}.log",
    params:
        plot=lambda wc: (load_experiments(config, workflow.basedir)["custom"][wc.experiment].get("plot") or {}),
        # the stop rules of the experiment (the sweep figure draws "rounds to stop" only when one exists)
        stop_rules=lambda wc: sorted({(s or {}).get("rule", "none") for s in [
            load_experiments(config, workflow.basedir)["custom"][wc.experiment].get("stop"),
            *(load_experiments(config, workflow.basedir)["custom"][wc.experiment].get("stop_by_algorithm") or {}).values()]}),
        title=lambda wc: load_experiments(config, workflow.basedir)["custom"][wc.experiment].get("description") or wc.experiment,
    script:
        "../scripts/custom_plots.py"
