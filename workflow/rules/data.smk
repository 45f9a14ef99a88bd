# Data: fetch raw files (cache -> mirror -> canonical URL, sha256-verified), then preprocess
# into the one processed format (fedrepro.data.Dataset: a folder of .npy arrays whose dataset.json,
# written last, marks it complete).

rule fetch:
    output:
        "data/raw/{dataset}.verified.json",
    log:
        "logs/fetch/{dataset}.log",
    priority: resources.DATA_PRIORITY     # every dataset before the runs that read it
    params:
        cache=lambda wc: config["data"]["cache"],
        mirror=lambda wc: DATA.mirror,
    script:
        "../scripts/fetch.py"


rule preprocess:
    input:
        lambda wc: f"data/raw/{raw_dataset(wc.dataset)}.verified.json",
    output:
        "data/processed/{dataset}/dataset.json",
    log:
        "logs/preprocess/{dataset}.log",
    priority: resources.DATA_PRIORITY
    params:
        cache=lambda wc: config["data"]["cache"],
        mirror=lambda wc: DATA.mirror,
    script:
        "../scripts/preprocess.py"


rule data:
    """Fetch and verify every dataset (each raw variant) that the cache or mirror holds."""
    input:
        lambda wc: [f"data/raw/{key}.verified.json" for key in local_datasets(DATA)],
