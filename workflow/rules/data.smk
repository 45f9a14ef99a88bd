# Data: fetch raw files (cache -> mirror -> canonical URL, sha256-verified), then preprocess
# into the one processed format (fedrepro.data.Dataset, .npz).

rule fetch:
    output:
        "data/raw/{dataset}.verified.json",
    log:
        "logs/fetch/{dataset}.log",
    params:
        cache=lambda wc: config["data"]["cache"],
        mirror=lambda wc: DATA.mirror,
    script:
        "../scripts/fetch.py"


rule preprocess:
    input:
        lambda wc: f"data/raw/{ws.raw_dataset(wc.dataset)}.verified.json",
    output:
        "data/processed/{dataset}.npz",
    log:
        "logs/preprocess/{dataset}.log",
    params:
        cache=lambda wc: config["data"]["cache"],
        mirror=lambda wc: DATA.mirror,
    script:
        "../scripts/preprocess.py"
