"""fedrepro.core.blas: which BLAS library, kernel and thread count a timing ran with (issue #28)."""
from __future__ import annotations

import os

from threadpoolctl import threadpool_info, threadpool_limits

from fedrepro.core.blas import KERNEL_VARIABLES, blas_record, describe, describe_kernel_env


def test_record_lists_numpys_blas_with_its_kernel():
    record = blas_record()
    numpy_libs = {os.path.basename(info["filepath"]) for info in threadpool_info()
                  if info["user_api"] == "blas" and "numpy" in info["filepath"]}
    assert numpy_libs, "numpy's BLAS is not loaded"
    assert numpy_libs <= {lib["file"] for lib in record["blas"]}
    for lib in record["blas"]:
        assert lib["library"] and lib["version"] and lib["architecture"] and lib["threads"] >= 1
    assert record["kernel_env"] == {name: os.environ.get(name) for name in KERNEL_VARIABLES}
    assert record["cpus"] == os.cpu_count() and len(record["loadavg"]) == 3


def test_threads_follow_the_limit_in_force():
    with threadpool_limits(limits=1, user_api="blas"):
        record = blas_record()
        line = describe(record)
    assert all(lib["threads"] == 1 for lib in record["blas"])
    assert "kernel, 1 thread)" in line and "threads)" not in line


def test_kernel_variables_are_named_set_or_unset():
    assert describe_kernel_env({"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": None}) == \
        "OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE unset"


def test_provenance_names_the_blas_kernel_and_threads():
    from fedrepro.experiments.report_markdown import provenance_markdown
    from fedrepro.experiments.results import provenance

    record = blas_record()
    prov = provenance("abc")
    for lib in record["blas"]:
        assert f"{lib['library']} {lib['version']} ({lib['architecture']} kernel, " in prov["blas"]
    assert prov["blas_kernel_env"] == describe_kernel_env(record["kernel_env"])
    md = provenance_markdown({"scale": "quick", "seed": 1, "papers": []}, "abc", {})
    assert f"| blas | {prov['blas']} |" in md and "| blas_kernel_env |" in md
