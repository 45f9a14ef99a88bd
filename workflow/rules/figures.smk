# Figures (PDF + PNG) and tables (Markdown, CSV, LaTeX) with the IDs of the papers' specs,
# plus generic plots of custom experiments.


def figure_inputs(wc):
    return [f"results/{wc.paper}/{e}{suffix}" for e in ws.figure_experiments(wc.paper, wc.fig, SKIPPED)
            for suffix in (".parquet", ".summary.parquet")]


rule figure:
    input:
        figure_inputs,
    output:
        pdf=report("figures/{paper}/{fig}.pdf", category="{paper}", subcategory="figures",
                   caption="../report/figure.rst"),
        png="figures/{paper}/{fig}.png",
    log:
        "logs/figures/{paper}/{fig}.log",
    params:
        experiments=lambda wc: ws.figure_experiments(wc.paper, wc.fig, SKIPPED),
    wildcard_constraints:
        paper="|".join(ws.PAPER_KEYS),
        fig=ws.id_pattern(OUTPUTS, "figure"),
    script:
        "../scripts/figure.py"


rule table:
    input:
        figure_inputs,
    output:
        md=report("figures/{paper}/{fig}.md", category="{paper}", subcategory="tables",
                  caption="../report/table.rst"),
        csv="figures/{paper}/{fig}.csv",
        tex="figures/{paper}/{fig}.tex",
    log:
        "logs/figures/{paper}/{fig}.log",
    params:
        experiments=lambda wc: ws.figure_experiments(wc.paper, wc.fig, SKIPPED),
    wildcard_constraints:
        paper="|".join(ws.PAPER_KEYS),
        fig=ws.id_pattern(OUTPUTS, "table"),
    script:
        "../scripts/figure.py"


rule custom_plots:
    input:
        trace="results/custom/{experiment}.parquet",
        summary="results/custom/{experiment}.summary.parquet",
    output:
        rounds=report("figures/custom/{experiment}_rounds.pdf", category="custom"),
        rounds_png="figures/custom/{experiment}_rounds.png",
        sweep=report("figures/custom/{experiment}_sweep.pdf", category="custom"),
        sweep_png="figures/custom/{experiment}_sweep.png",
    log:
        "logs/figures/custom/{experiment}.log",
    params:
        plot=lambda wc: (load_experiments(config, workflow.basedir)["custom"][wc.experiment].get("plot") or {}),
    script:
        "../scripts/custom_plots.py"
